"""The simulated changelog every task's state is restored from: a deterministic function of task and offset.

Every worker of a sandbox shares one `Changelog` (same epoch, initial offset and input rate), so all pods
agree on every task's end offset at every moment, as consumers of one Kafka topic do. A record's value
depends only on its task and offset, and the state of a task is the sum of the values it has applied: a
state restored in pieces, from a surviving volume, equals a state restored at once, and `digest()` proves it.
"""

from __future__ import annotations

import zlib
from dataclasses import dataclass

_MASK = (1 << 64) - 1


def _coefficients(task: str) -> tuple[int, int]:
    seed = zlib.crc32(task.encode())
    return seed | 1, zlib.crc32(task.encode(), seed)


def value(task: str, offset: int) -> int:
    """The record at `offset` of `task`'s changelog."""
    a, b = _coefficients(task)
    return (a * offset + b) & _MASK


def digest(task: str, start: int, end: int, base: int = 0) -> int:
    """`base` plus the values of offsets `[start, end)`, modulo 2**64, in constant time (a closed form)."""
    a, b = _coefficients(task)
    span = end - start
    offsets_sum = (end * (end - 1) - start * (start - 1)) // 2
    return (base + a * offsets_sum + b * span) & _MASK


@dataclass(frozen=True)
class Changelog:
    """Every task's changelog held `initial_offset` records at `epoch` (Unix time) and grows at
    `input_rate` records per second since: the end offset a restoring replica chases."""

    epoch: float
    initial_offset: int
    input_rate: float

    def end_offset(self, now: float) -> int:
        return self.initial_offset + int(self.input_rate * max(0.0, now - self.epoch))
