"""What one round observed of an app's load, as the autoscaler's `LoadSample` (docs/autoscaling.md).

From the pods' Contract 3 metrics: each pod's processed rate (the sum of `smoothscale_task_process_rate`
over the tasks the publication makes it run active) and busy ratio (`smoothscale_pod_busy_ratio`), the
backlog (the sum of the active tasks' `smoothscale_task_input_lag`), the input rate (what was processed
plus what the backlog grew by since the last round), and the restore rate measured on the copies that
restore now (standbys and warmups whose lag fell since the last round, records per second per copy). Pure:
an immutable value keeps the last round's backlog and copies' lags.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from smoothscale.contract.publication import Publication

from .autoscaler import LoadSample, PodLoad
from .observed import PodMetrics, ScrapeResult


@dataclass(frozen=True)
class LoadSignal:
    """The last round's backlog and restoring copies' lags (an immutable value, one per app)."""

    at: float | None = None
    backlog: float | None = None
    copy_lags: Mapping[tuple[str, str], int] = field(default_factory=dict)

    def sample(
        self,
        now: float,
        replicas: int,
        results: Mapping[str, ScrapeResult],
        published: Publication,
        changelog_records: Mapping[str, int],
        max_warmups: int,
        migrating: bool,
    ) -> tuple[LoadSample, LoadSignal]:
        """This round's sample and the signal the next round compares with. `changelog_records`: every
        task's restore size (stateless tasks 0), whose mean a moved task restores."""
        owners = published.active_owner()
        metrics = {pod: r for pod, r in results.items() if isinstance(r, PodMetrics)}
        pods: dict[str, PodLoad] = {}
        backlog = 0.0
        for pod, result in metrics.items():
            active = [task for task, owner in owners.items() if owner == pod]
            processed = sum(result.process_rates.get(task, 0.0) for task in active)
            pods[pod] = PodLoad(processed, result.busy_ratio)
            backlog += sum(result.input_lags.get(task, 0) for task in active)
        lags = {
            (pod, task): lag
            for pod, result in metrics.items()
            for task, lag in result.lags.items()
            if owners.get(task) != pod
        }
        elapsed = now - self.at if self.at is not None else 0.0
        processed_total = sum(p.processed for p in pods.values())
        input_rate = processed_total
        restore_rate: float | None = None
        if elapsed > 0:
            if self.backlog is not None:
                input_rate = max(0.0, processed_total + (backlog - self.backlog) / elapsed)
            falls = [
                (self.copy_lags[key] - lag) / elapsed
                for key, lag in lags.items()
                if key in self.copy_lags and lag < self.copy_lags[key]
            ]
            restore_rate = sum(falls) / len(falls) if falls else None
        tasks = len(changelog_records) or len(owners)
        sample = LoadSample(
            now=now,
            replicas=replicas,
            input_rate=input_rate,
            backlog=backlog,
            pods=pods,
            tasks=tasks,
            state_per_task=sum(changelog_records.values()) / tasks if tasks else 0.0,
            restore_rate=restore_rate,
            max_warmups=max_warmups,
            migrating=migrating,
        )
        return sample, LoadSignal(now, backlog, lags)
