"""Each task's processing rate, averaged over about a minute: the weights `balanceBy: weight` balances.

Pods report `smoothscale_task_process_rate{task=...}`, the records per second a task processed over the
pod's last tick. One scrape of it is a poor weight: a task that has just moved processes the backlog its
hand-over left at the pod's full speed for a few seconds, a garbage-collection pause reads as zero, and
ticks are short. So the operator keeps an exponentially weighted mean per task with a time constant of
`TIME_CONSTANT_SECONDS` (60 s): a sample's influence decays with its age in seconds, not with the number of
rounds, because rounds come at irregular intervals (every scrape interval, and also at once on pod and
spec events; a burst of rounds must not flush the history). Over a 60 s constant a 5-second burst at twice
the steady rate moves the mean by about 8%, while a lasting change of the input rate shows two thirds of
its size within a minute, far sooner than the membership changes that re-plan.

Only the pod that the published generation makes a task's active owner is asked for its rate: standbys and
warmups report 0, and during a hand-over nobody owns the task, so nothing is sampled rather than a false 0.

The means live in memory only and start afresh when the operator restarts. That is acceptable because a
weight only shapes the target's balance, never safety: until a task has a sample, the snapshot uses the
spec's subtopology weight (`snapshot.task_weights`), and the first scrape after a restart samples every
task that has an owner; a restart costs the smoothing of one minute, not correctness.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from datetime import datetime
from typing import Final

from smoothscale.contract.publication import Publication

from .observed import PodMetrics, ScrapeResult

TIME_CONSTANT_SECONDS: Final = 60.0


def owner_rates(results: Mapping[str, ScrapeResult], published: Publication) -> dict[str, float]:
    """Each task's rate as its published active owner reports it (tasks whose owner reported none are
    left out)."""
    rates: dict[str, float] = {}
    for task, pod in published.active_owner().items():
        result = results.get(pod)
        if isinstance(result, PodMetrics) and task in result.process_rates:
            rates[task] = result.process_rates[task]
    return rates


@dataclass(frozen=True)
class ProcessRates:
    """Exponentially weighted means of the tasks' processing rates (records/s), one per app: an immutable
    value, each round's samples make the next one."""

    time_constant: float = TIME_CONSTANT_SECONDS
    _means: Mapping[str, float] = field(default_factory=dict)
    _sampled_at: Mapping[str, datetime] = field(default_factory=dict)
    _samples: Mapping[str, float] = field(default_factory=dict)
    """Each task's sample last folded in."""

    def observe(self, rates: Mapping[str, float], now: datetime) -> ProcessRates:
        """These means with one round's new samples folded in; a task's first sample is its mean. A sample
        equal to the one last folded is the same read seen again (a steady pod is read every
        `steady_scrape_interval`, its app observed every round): folding it again would make the means
        depend on how often the app was observed, and a round skipped (`Stepped.repeats`) decide otherwise
        than one stepped."""
        fresh = {task: rate for task, rate in rates.items() if self._samples.get(task) != rate}
        if not fresh:
            return self
        means, sampled_at = dict(self._means), dict(self._sampled_at)
        for task, rate in fresh.items():
            last = sampled_at.get(task)
            if last is None:
                means[task] = rate
            else:
                age = max((now - last).total_seconds(), 0.0)
                keep = math.exp(-age / self.time_constant)
                means[task] = keep * means[task] + (1 - keep) * rate
            sampled_at[task] = now
        return replace(self, _means=means, _sampled_at=sampled_at, _samples={**self._samples, **fresh})

    def means(self) -> dict[str, float]:
        return dict(self._means)
