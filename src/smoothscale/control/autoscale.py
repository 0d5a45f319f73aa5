"""Autoscaler-facing decisions: `status.autoscaling.recommendedReplicas`, and the scale-down stabilisation
window. Pure functions of what one reconciliation observed.

**The recommendation** (a recommendation only, as the Flink autoscaler's metrics-only mode: nothing acts on
it unless an autoscaler or a person copies it into `spec.replicas`):

    demand   = R + L / T
    capacity = P
    recommendedReplicas = clamp(ceil(demand / capacity), 1, tasks)

- `R`: the app's processing rate, the sum over tasks of `smoothscale_task_process_rate` as each task's
  active owner reports it, averaged over ~60 s (`rates.ProcessRates`). When the app keeps up, this is the
  input rate.
- `P`: a pod's capacity. Where pods report `smoothscale_pod_busy_ratio`, their true capacity (what they
  processed divided by their busy time: DS2; Flink divides by its busy-time ratio too) at the target busy
  ratio of `spec.autoscaling.target.busyRatio` (0.8 by default). Else the busiest
  pod's rate, the largest sum of those rates over one pod's active tasks: a pod has been seen to sustain
  it, so it is a lower bound of a pod's capacity.
- `L`: the lag of the active tasks (`status.lag.total`), to be drained within `T` = `LAG_DRAIN_SECONDS` on
  top of the input.

Why this choice: without a busy ratio it never recommends a pod load above one already observed (so
acting on it cannot overload pods beyond what they demonstrably handle), it recommends consolidating when
the load is spread thinner than the busiest pod carries (an idle app tends to ceil(R / P) pods), and it
rises with lag, which is the symptom an autoscaler must react to. It is capped at the task count, since a
pod without a task processes nothing. No rate measured yet (a new app, or an app whose pods do not report
the metric) gives no recommendation (null) rather than a guess.

**The stabilisation window** (`spec.scaling.scaleDownStabilization`, default off): a scale-down that
arrives while warmups are in flight is held, up to the window, until they finish. This damps an
autoscaler that flaps (up, then down before the new pods have even caught up), at a cost: the held
scale-down starts only after the tasks have moved onto the pods it then removes, so they may move twice.
Without the window the operator re-targets the migration at once and no task moves twice.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Final

from smoothscale.contract.publication import Publication

from .autoscaler import MIN_BUSY
from .observed import PodMetrics, ScrapeResult
from .pods import PodInfo

LAG_DRAIN_SECONDS: Final = 300.0
"""`T`: the lag should be gone within five minutes at the recommended size."""


def recommended_replicas(
    rates: Mapping[str, float],
    published: Publication,
    lag_total: int,
    tasks: int,
    drain_seconds: float = LAG_DRAIN_SECONDS,
    results: Mapping[str, ScrapeResult] | None = None,
    busy_ratio: float = 0.8,
) -> int | None:
    """ceil((R + L / T) / P) within [1, tasks], or None while no processing has been measured. `P` is the
    pods' measured capacity at `busy_ratio` (`spec.autoscaling.target.busyRatio`) where they report a busy
    ratio (`results`), else the busiest pod's rate."""
    per_pod = [sum(rates.get(task, 0.0) for task in roles.active) for roles in published.assignment.values()]
    busiest = max(per_pod, default=0.0)
    total = sum(rates.get(task, 0.0) for task in published.active_owner())
    measured = measured_capacity(rates, published, results or {})
    capacity = measured * busy_ratio if measured is not None else busiest
    if capacity <= 0 or tasks <= 0:
        return None
    demand = total + max(0, lag_total) / drain_seconds
    return max(1, min(tasks, math.ceil(demand / capacity - 1e-9)))


def measured_capacity(
    rates: Mapping[str, float], published: Publication, results: Mapping[str, ScrapeResult]
) -> float | None:
    """A pod's true capacity (records/s at busy 1): what the pods that report a busy ratio processed over
    their busy time (DS2); None when none reports one (or all are idle)."""
    processed = busy = 0.0
    for pod, roles in published.assignment.items():
        result = results.get(pod)
        if isinstance(result, PodMetrics) and result.busy_ratio is not None and result.busy_ratio >= MIN_BUSY:
            processed += sum(rates.get(task, 0.0) for task in roles.active)
            busy += result.busy_ratio
    return processed / busy if busy > 0 and processed > 0 else None


def staying_current(pods: Sequence[PodInfo], revision: str) -> int:
    """Pods of the current template revision that stay: what a scale-down would reduce. Pods of an old
    revision do not count, so that a swap (which surges new pods while warmups run) is never mistaken for
    a scale-down and held."""
    return sum(1 for p in pods if p.revision == revision and not (p.is_leaving or p.deleting or p.stopped))


@dataclass(frozen=True)
class ScaleDownHold:
    """The stabilisation window of one app: since when a scale-down has been held (an immutable value).

    Memory only (a debounce): after an operator restart a scale-down may be held for up to one more window.
    """

    since: datetime | None = None

    def ends(self, window: timedelta | None) -> datetime | None:
        """When the held scale-down goes ahead whatever the warmups do (None: none is held)."""
        return None if self.since is None or window is None else self.since + window

    def replicas(
        self, wanted: int, staying: int, migrating: bool, window: timedelta | None, now: datetime
    ) -> tuple[int, ScaleDownHold]:
        """The replicas to act on, and the hold after this round: `staying` (no pod marked leaving) while a
        scale-down to `wanted` waits for warmups, for at most `window`; else `wanted`."""
        if window is None or wanted >= staying or not migrating:
            return wanted, ScaleDownHold()
        since = self.since if self.since is not None else now
        return (staying if now - since < window else wanted), ScaleDownHold(since)
