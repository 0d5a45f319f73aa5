"""One canonical order for tasks and clients, so that nothing published depends on the order of its input.

Natural order ("0_2" before "0_10", "orders-9" before "orders-10") also makes assignments readable. Different
ids can compare equal in natural order ("0_1" and "0_01"); the exact string breaks the tie, so the order is
total. The planner's vectorised variant (`smoothscale.assignor.ordering.natural_order`) gives the same order.
"""

from __future__ import annotations

import re
from collections.abc import Collection
from functools import lru_cache

_DIGITS = re.compile(r"(\d+)")
_TASK_ID = re.compile(r"(\d+)_(\d+)")

NaturalKey = tuple[tuple[tuple[int, int | str], ...], str]


@lru_cache(maxsize=1 << 17)
def natural_key(text: str) -> NaturalKey:
    """Sort key that compares digit runs as numbers and everything else as text, then the exact string.

    Cached: the same few thousand task and pod ids are sorted again at every plan and publication.
    """
    task = _TASK_ID.fullmatch(text)
    if task is not None:  # the common "<subtopology>_<partition>" shape, without the generic split
        return ((0, int(task[1])), (1, "_"), (0, int(task[2]))), text
    return tuple(
        (0, int(part)) if part.isdigit() else (1, part) for part in _DIGITS.split(text) if part
    ), text


def natural_sorted(items: Collection[str]) -> list[str]:
    return sorted(items, key=natural_key)
