"""Kubernetes-style duration strings: what Go's time.ParseDuration accepts (unsigned, ASCII units)."""

from __future__ import annotations

import re

import pytest
from hypothesis import given
from hypothesis import strategies as st

from smoothscale.resource.durations import DURATION_PATTERN, DurationError, parse_duration


@pytest.mark.parametrize(
    ("text", "seconds"),
    [
        ("10m", 600.0),
        ("1h30m", 5400.0),
        ("45s", 45.0),
        ("500ms", 0.5),
        ("1.5h", 5400.0),
        ("2h45m30.5s", 9930.5),
        (".5s", 0.5),
        ("5.s", 5.0),
        ("0", 0.0),
        ("0s", 0.0),
        ("1us", 1e-6),
        ("100ns", 1e-7),
        ("1m1ms", 60.001),
        ("1.1s", 1.1),
    ],
)
def test_parses_like_go(text: str, seconds: float) -> None:
    assert parse_duration(text) == pytest.approx(seconds, rel=1e-12, abs=1e-15)


@pytest.mark.parametrize(
    "text",
    [
        "",
        "10",
        "10 m",
        "1h 30m",
        "10M",
        "1d",
        "-5s",
        "+5s",
        "m",
        "ms",
        "1.2.3s",
        "5µs",
        " 5s",
        "5s ",
        "5s\n",
        "1e3s",
        ".",
    ],
)
def test_rejects_what_is_not_a_duration(text: str) -> None:
    with pytest.raises(DurationError) as raised:
        parse_duration(text)
    message = str(raised.value)
    assert repr(text) in message, "the message quotes the bad value"
    assert "1h30m" in message, "the message shows an accepted form"


@pytest.mark.parametrize("value", [None, 600, 1.5, b"10m"])
def test_rejects_non_strings(value: object) -> None:
    with pytest.raises(DurationError):
        parse_duration(value)  # type: ignore[arg-type]


def test_duration_error_is_a_value_error() -> None:
    assert issubclass(DurationError, ValueError)


_UNITS = {"ns": 1e-9, "us": 1e-6, "ms": 1e-3, "s": 1.0, "m": 60.0, "h": 3600.0}


@given(
    st.lists(
        st.tuples(st.integers(min_value=0, max_value=10_000), st.sampled_from(sorted(_UNITS))),
        min_size=1,
        max_size=6,
    )
)
def test_segments_add_up(segments: list[tuple[int, str]]) -> None:
    text = "".join(f"{number}{unit}" for number, unit in segments)
    expected = sum(number * _UNITS[unit] for number, unit in segments)
    assert parse_duration(text) == pytest.approx(expected, rel=1e-9, abs=1e-12)


@given(st.text(alphabet="0123456789.nsumh -+\n", max_size=12))
def test_schema_pattern_and_parser_agree(text: str) -> None:
    """The API server (pattern) and the operator (parser) must accept exactly the same strings."""
    matches = re.fullmatch(DURATION_PATTERN, text) is not None
    try:
        parse_duration(text)
        parsed = True
    except DurationError:
        parsed = False
    assert matches == parsed
