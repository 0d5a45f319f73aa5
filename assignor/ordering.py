"""One canonical order for tasks and clients, so that a plan never depends on the order of its input.

Natural order ("0_2" before "0_10", "orders-9" before "orders-10") also makes plans readable.
"""

import re

_DIGITS = re.compile(r"(\d+)")


def natural_key(text: str) -> tuple[tuple[int, int | str], ...]:
    """Sort key that compares digit runs as numbers and everything else as text."""
    return tuple((0, int(part)) if part.isdigit() else (1, part) for part in _DIGITS.split(text) if part)


def natural_sorted(items: "list[str] | set[str] | frozenset[str]") -> list[str]:
    return sorted(items, key=natural_key)
