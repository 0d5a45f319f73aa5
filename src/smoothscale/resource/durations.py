"""Kubernetes-style duration strings (`30s`, `10m`, `1h30m`, `500ms`) as seconds.

People write durations in a `StreamsApp` the way they do everywhere else in Kubernetes, where they are Go's
`time.ParseDuration` format: one or more decimal numbers each followed by a unit, no spaces. The grammar here
is that format without a sign (every duration in the resource is a length of time, never negative) and with
the ASCII units only (`us`, not `µs`). The same regular expression goes into the CRD so that the API server
and the operator accept exactly the same strings, and CEL's `duration()` (Go's parser) agrees with both.
"""

from __future__ import annotations

import re
from decimal import Decimal

__all__ = ["DURATION_PATTERN", "DurationError", "parse_duration"]

_UNIT_SECONDS: dict[str, Decimal] = {
    "ns": Decimal("1e-9"),
    "us": Decimal("1e-6"),
    "ms": Decimal("1e-3"),
    "s": Decimal(1),
    "m": Decimal(60),
    "h": Decimal(3600),
}

# `ms` must come before `m` and `s` so that `500ms` is one segment, not `500m` followed by a stray `s`.
_NUMBER = r"(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)"
_UNIT = r"(?:ns|us|ms|s|m|h)"
DURATION_PATTERN = rf"^(?:0|(?:{_NUMBER}{_UNIT})+)$"
"""Anchored regular expression (Python, RE2 and ECMA compatible) for a valid duration string."""

_WHOLE = re.compile(DURATION_PATTERN)
_SEGMENT = re.compile(rf"({_NUMBER})({_UNIT})")


class DurationError(ValueError):
    """A string that is not a duration; the message quotes it and shows the accepted form."""


def parse_duration(text: str) -> float:
    """Return the length of `text` in seconds, or raise `DurationError` saying what is accepted.

    Decimal arithmetic keeps `1.1s` at exactly 1.1 and `1h30m` at exactly 5400 before the final conversion.
    """
    if not isinstance(text, str) or not _WHOLE.fullmatch(text):
        raise DurationError(
            f"{text!r} is not a duration: write numbers with units ns, us, ms, s, m or h and no spaces, "
            "e.g. 45s, 10m, 1h30m or 500ms"
        )
    total = sum(
        (Decimal(number) * _UNIT_SECONDS[unit] for number, unit in _SEGMENT.findall(text)), Decimal(0)
    )
    return float(total)
