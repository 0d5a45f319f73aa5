"""Which pods a round reads: every pod while anything moves, a steady app's pods at a slower cadence.

A pod's lag matters while something moves (a warmup catching up, a hand-over, a pod starting or leaving) and
hardly while nothing does: a steady app's pods report the same lag round after round. So a steady app (the
last step found it at rest: `Decisions.at_rest`, `step.Stepped.steady`) has each pod read once every
`steady_interval`, and anything that breaks the steadiness (a new generation, a pod event, a lag or rate
that changed in the last read, a scrape failure) has the next round read every pod again. Scraping less,
rather than more cheaply, is what keeps a steady operator's CPU low at a thousand pods.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass


@dataclass(frozen=True)
class ScrapeCadence:
    """How often a pod is read: every round while the app moves, every `steady_interval` seconds (at least
    every round's `interval`) while it is steady."""

    interval: float
    steady_interval: float


def due(
    pods: Iterable[str], last_read: Mapping[str, float], now: float, *, steady: bool, cadence: ScrapeCadence
) -> frozenset[str]:
    """The pods to read now (`now` and `last_read` on one monotonic clock): all of them unless the app is
    steady; then each pod not read within the steady interval, and a pod never read."""
    if not steady:
        return frozenset(pods)
    # a round that starts slightly early must not push a pod's read back by a whole interval
    stale = now - max(cadence.steady_interval, cadence.interval) + cadence.interval / 2
    return frozenset(pod for pod in pods if (read := last_read.get(pod)) is None or read <= stale)


def next_read_in(last_read: Mapping[str, float], now: float, cadence: ScrapeCadence) -> float:
    """Seconds until the first of a steady app's pods is due a read (`due`), at least one round's
    `interval`: a steady app's loop sleeps that long, woken earlier by any change its watches see or a
    rule's moment (`wake_at`). Its rounds then come with its reads, not every interval."""
    if not last_read:
        return cadence.interval
    first = min(last_read.values()) + max(cadence.steady_interval, cadence.interval) - cadence.interval / 2
    return max(cadence.interval, first - now)
