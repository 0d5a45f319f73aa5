"""One canonical order for tasks and clients, so that a plan never depends on the order of its input.

Natural order ("0_2" before "0_10", "orders-9" before "orders-10") also makes plans readable. Different ids
can compare equal in natural order ("0_1" and "0_01"); the exact string breaks the tie, so the order is
total and a plan stays byte-identical whatever the order of its input.
"""

import re
from functools import lru_cache
from itertools import chain

import numpy as np

_DIGITS = re.compile(r"(\d+)")
_TASK_ID = re.compile(r"(\d+)_(\d+)")
_TASK_IDS = re.compile(r"^(\d+)_(\d+)$", re.MULTILINE)

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


def natural_sorted(items: "list[str] | set[str] | frozenset[str]") -> list[str]:
    return sorted(items, key=natural_key)


def natural_order(ids: list[str]) -> list[int]:
    """Positions of `ids` in natural order; vectorised when every id is a plain "<int>_<int>" task id."""
    pairs = _TASK_IDS.findall("\n".join(ids))
    if len(pairs) == len(ids) and ids:
        digits = chain.from_iterable(pairs)
        numbers = np.fromiter(map(int, digits), dtype=np.int64, count=2 * len(ids)).reshape(-1, 2)
        order = np.lexsort((numbers[:, 1], numbers[:, 0]))
        ordered = numbers[order]
        if np.any(np.all(ordered[1:] == ordered[:-1], axis=1)):  # "0_1" and "0_01": the exact string decides
            order = np.lexsort((np.array(ids), numbers[:, 1], numbers[:, 0]))
        result: list[int] = order.tolist()
        return result
    return sorted(range(len(ids)), key=lambda i: natural_key(ids[i]))
