"""The planner's fast path to the canonical order of `smoothscale.contract.ordering`, so that a plan never
depends on the order of its input.

Natural order ("0_2" before "0_10", "orders-9" before "orders-10") also makes plans readable. Different ids
can compare equal in natural order ("0_1" and "0_01"); the exact string breaks the tie, so the order is
total and a plan stays byte-identical whatever the order of its input.
"""

import re
from itertools import chain

import numpy as np

from smoothscale.contract.ordering import natural_key

_TASK_IDS = re.compile(r"^(\d+)_(\d+)$", re.MULTILINE)


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
