"""Which pods a round reads: the pods a decision waits on every round, the others at a slower cadence.

A pod's lag matters while something moves on it (a warmup catching up, a hand-over, a pod starting or
leaving) and hardly otherwise: a pod that neither gains nor gives up a task reports the same lag round after
round. So the step names the pods its decisions wait on (`Decisions.read_often`: none for an app at rest,
`step.Stepped.read_often`), the round reads those every `interval` and each other pod once every
`steady_interval`, an app's steady pods together; a pod that has come or changed since is read at once, and a
new spec or a pod gone or no longer ready has the next round read every pod again. Scraping less, rather than
more cheaply, is what keeps the operator's CPU low at a thousand pods, steady and while ten apps scale out at
once.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping
from dataclasses import dataclass


@dataclass(frozen=True)
class ScrapeCadence:
    """How often a pod is read: every round while a decision waits on it, every `steady_interval` seconds
    (at least every round's `interval`) otherwise."""

    interval: float
    steady_interval: float


def due(
    pods: Iterable[str],
    last_read: Mapping[str, float],
    now: float,
    *,
    read_often: Collection[str] | None,
    cadence: ScrapeCadence,
) -> frozenset[str]:
    """The pods to read now (`now` and `last_read` on one monotonic clock): the pods of `read_often` (None:
    all of them), a pod never read, and once any other pod is due its steady read (not read within the steady
    interval), every pod not read within half of it (less a round's interval, for the rounds' jitter).

    That last part keeps an app's steady reads together: its pods come up, change and finish their part of a
    migration at different moments, so their last reads spread over the interval, and an app at rest would
    wake (`next_read_in`) for each of them, a round per pod. Read along with the first one due, the pods fall
    into one phase within a few steady intervals (of any two phases, one follows the other by at least half an
    interval), and an app at rest takes one round per interval."""
    if read_often is None:
        return frozenset(pods)
    steady = max(cadence.steady_interval, cadence.interval)
    # a round that starts slightly early must not push a pod's read back by a whole interval
    stale = now - steady + cadence.interval / 2
    steady_pods = [pod for pod in pods if pod not in read_often]
    if any((read := last_read.get(pod)) is None or read <= stale for pod in steady_pods):
        stale = max(stale, now - (steady - cadence.interval) / 2)
    return frozenset(
        pod for pod in pods if pod in read_often or (read := last_read.get(pod)) is None or read <= stale
    )


def next_read_in(last_read: Mapping[str, float], now: float, cadence: ScrapeCadence) -> float:
    """Seconds until the first of a steady app's pods is due a read (`due`), at least one round's
    `interval`: a steady app's loop sleeps that long, woken earlier by any change its watches see or a
    rule's moment (`wake_at`). Its rounds then come with its reads, not every interval."""
    if not last_read:
        return cadence.interval
    first = min(last_read.values()) + max(cadence.steady_interval, cadence.interval) - cadence.interval / 2
    return max(cadence.interval, first - now)
