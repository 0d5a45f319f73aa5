"""The operator's metrics that one round's decisions give, per app: rounds, copies per pod and zone, lag,
conditions, the migration's progress and ETA, assignor fallbacks, lost pods, Kafka errors.

The chart's alert rules and Grafana dashboard read them (docs/alerts.md). A round that observes what the
last step observed is not decided again (`control.step.Stepped.repeats`): it counts as a round, and as a
repeated one, and writes nothing else. Of the others, each group is recomputed only when its inputs are
other objects than last time, and a series is written only when it changed.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from smoothscale.contract.publication import Publication
from smoothscale.control.observed import FailureReason
from smoothscale.control.pods import PodInfo
from smoothscale.control.progress import Progress
from smoothscale.control.step import Decisions
from smoothscale.control.zones import pod_zone
from smoothscale.resource import StreamsAppStatus

from .appref import AppRef
from .metrics import OperatorMetrics, label_sets

FALLBACK_EVENT = "AssignorFallback"
"""The reason of the Event `control.assignorfallbacks` posts for each rebalance that fell back."""


class RoundMetrics:
    def __init__(self, metrics: OperatorMetrics, app: AppRef) -> None:
        self._metrics = metrics
        self._labels = (app.namespace, app.name)
        # Counters exist from the app's first round on, at 0: a rate over them is 0, not "no data".
        for counter in (
            metrics.rounds,
            metrics.rounds_repeated,
            metrics.assignor_fallbacks,
            metrics.pods_lost,
            metrics.kafka_errors,
            metrics.reconcile_errors,
        ):
            counter.labels(*self._labels)
        for reason in FailureReason:
            metrics.scrape_failures.labels(*self._labels, reason)
        self._placed: tuple[Publication, Sequence[PodInfo]] | None = None
        self._copies: dict[tuple[str, str, str], int] = {}
        self._status: StreamsAppStatus | None = None
        self._conditions: dict[str, tuple[str, str]] = {}
        self._progress: Progress | None = None

    def round(
        self,
        decisions: Decisions,
        published: Publication,
        zones: Mapping[str, str],
        *,
        kafka_failed: bool,
    ) -> None:
        metrics, labels = self._metrics, self._labels
        metrics.rounds.labels(*labels).inc()
        fallbacks = sum(1 for event in decisions.events if event.reason == FALLBACK_EVENT)
        if fallbacks:
            metrics.assignor_fallbacks.labels(*labels).inc(fallbacks)
        if decisions.lost:
            metrics.pods_lost.labels(*labels).inc(len(decisions.lost))
        if kafka_failed:
            metrics.kafka_errors.labels(*labels).inc()
        self._place(published, decisions.pods, zones)
        if decisions.status is not None and decisions.status is not self._status:
            self._status = decisions.status
            self._conditions_of(decisions.status)
        if decisions.progress is not self._progress:
            self._migration(decisions.progress)

    def repeated(self) -> None:
        """A round whose step was not run again: its observation was the last step's (the time aside)."""
        self._metrics.rounds.labels(*self._labels).inc()
        self._metrics.rounds_repeated.labels(*self._labels).inc()

    def _place(self, published: Publication, pods: Sequence[PodInfo], zones: Mapping[str, str]) -> None:
        """`pod_tasks`: each pod's copies by role, with its zone."""
        placed = self._placed
        if placed is not None and placed[0] is published and placed[1] is pods:
            return
        self._placed = (published, pods)
        zone_of = {pod.name: pod_zone(pod.node, zones) or "unknown" for pod in pods}
        copies: dict[tuple[str, str, str], int] = {}
        for pod, roles in published.assignment.items():
            zone = zone_of.get(pod, "unknown")
            for role, tasks in (
                ("active", roles.active),
                ("standby", roles.standby),
                ("warmup", roles.warmup),
            ):
                copies[pod, zone, role] = len(tasks)
        gauge = self._metrics.pod_tasks
        for key in self._copies.keys() - copies.keys():
            gauge.remove(*self._labels, *key)
        for key, count in copies.items():
            if self._copies.get(key) != count:
                gauge.labels(*self._labels, *key).set(count)
        self._copies = copies

    def _conditions_of(self, status: StreamsAppStatus) -> None:
        """`condition`: 1 for each condition's status and reason (the series of its last one removed), and
        the active tasks' lag."""
        gauge = self._metrics.condition
        for condition in status.conditions:
            now = (str(condition.status), condition.reason)
            before = self._conditions.get(condition.type)
            if before == now:
                continue
            if before is not None:
                gauge.remove(*self._labels, condition.type, *before)
            gauge.labels(*self._labels, condition.type, *now).set(1)
            self._conditions[condition.type] = now
        if status.lag is not None:
            self._metrics.lag.labels(*self._labels).set(status.lag.total)

    def _migration(self, progress: Progress | None) -> None:
        """The migration's gauges while one runs; none otherwise (an alert on its ETA has nothing to read)."""
        metrics, labels = self._metrics, self._labels
        gauges = (
            metrics.migration_progress,
            metrics.migration_records_left,
            metrics.migration_started,
            metrics.migration_eta,
            metrics.migration_first_eta,
        )
        self._progress = progress
        if progress is None:
            for gauge in gauges:
                if labels in label_sets(gauge):
                    gauge.remove(*labels)
            return
        metrics.migration_progress.labels(*labels).set(progress.percent / 100)
        metrics.migration_records_left.labels(*labels).set(progress.records_left)
        metrics.migration_started.labels(*labels).set(progress.started.timestamp())
        for gauge, moment in (
            (metrics.migration_eta, progress.eta),
            (metrics.migration_first_eta, progress.first_eta),
        ):
            if moment is not None:
                gauge.labels(*labels).set(moment.timestamp())
            elif labels in label_sets(gauge):
                gauge.remove(*labels)
