"""Prometheus metrics of the operator itself, served on a configurable address and port.

Each operator has its own registry (not prometheus-client's global one), so that several operators in one
process (tests, the benchmark) do not mix their series. Series are labelled by `namespace` and `app`; an
app's series are removed when its reconciler stops, so deleted apps do not linger on dashboards. The chart's
alert rules and Grafana dashboard read them (docs/alerts.md lists them); `roundmetrics` sets the ones a
round's decisions give.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from aiohttp import web
from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, ProcessCollector
from prometheus_client.exposition import CONTENT_TYPE_LATEST, generate_latest

from .appref import AppRef

_APP = ("namespace", "app")


class OperatorMetrics:
    def __init__(self) -> None:
        self.registry = CollectorRegistry()
        r = self.registry
        self.plan_duration = Histogram(
            "smoothscale_operator_plan_duration_seconds",
            "Time to compute one plan, snapshot building included.",
            _APP,
            registry=r,
            buckets=(0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30),
        )
        self.plans = Counter("smoothscale_operator_plans", "Plans computed.", (*_APP, "stable"), registry=r)
        self.generation = Gauge(
            "smoothscale_operator_assignment_generation", "Generation published last.", _APP, registry=r
        )
        self.publications = Counter(
            "smoothscale_operator_publications", "Generations published.", _APP, registry=r
        )
        self.warmups = Gauge(
            "smoothscale_operator_warmups", "Warmup copies in the published generation.", _APP, registry=r
        )
        self.handovers = Gauge(
            "smoothscale_operator_handovers_pending",
            "Revoked tasks waiting for their old owner's acknowledgement.",
            _APP,
            registry=r,
        )
        self.handover_polls = Counter(
            "smoothscale_operator_handover_polls",
            "Scrapes, between rounds, of the pods a pending hand-over waits on.",
            _APP,
            registry=r,
        )
        self.pods_leaving = Gauge("smoothscale_operator_pods_leaving", "Pods leaving.", _APP, registry=r)
        self.scrape_failures = Counter(
            "smoothscale_operator_scrape_failures",
            "Pod metrics scrapes that failed, by reason.",
            (*_APP, "reason"),
            registry=r,
        )
        self.reconcile_errors = Counter(
            "smoothscale_operator_reconcile_errors", "Reconciliations that failed.", _APP, registry=r
        )
        self.rounds = Counter(
            "smoothscale_operator_rounds",
            "Rounds (reconciliations) run, repeated ones included.",
            _APP,
            registry=r,
        )
        self.rounds_repeated = Counter(
            "smoothscale_operator_rounds_repeated",
            "Rounds that observed what the last step observed before any of its rules fell due: its decisions"
            " stood and the step was not run again.",
            _APP,
            registry=r,
        )
        self.pod_tasks = Gauge(
            "smoothscale_operator_pod_tasks",
            "Copies each pod holds in the published generation, by role (active, standby, warmup).",
            (*_APP, "pod", "zone", "role"),
            registry=r,
        )
        self.lag = Gauge(
            "smoothscale_operator_lag_records", "Sum of the active tasks' lags (records).", _APP, registry=r
        )
        self.condition = Gauge(
            "smoothscale_operator_condition",
            "1 for each condition's current status and reason (the app's status.conditions).",
            (*_APP, "type", "status", "reason"),
            registry=r,
        )
        self.migration_progress = Gauge(
            "smoothscale_operator_migration_progress_ratio",
            "While a migration runs: records restored over records restored and left.",
            _APP,
            registry=r,
        )
        self.migration_records_left = Gauge(
            "smoothscale_operator_migration_records_left",
            "While a migration runs: records its warming, queued and restoring copies still have to restore.",
            _APP,
            registry=r,
        )
        self.migration_started = Gauge(
            "smoothscale_operator_migration_started_timestamp_seconds",
            "While a migration runs: when it started.",
            _APP,
            registry=r,
        )
        self.migration_eta = Gauge(
            "smoothscale_operator_migration_eta_timestamp_seconds",
            "While a migration runs: its estimated completion time, as last estimated.",
            _APP,
            registry=r,
        )
        self.migration_first_eta = Gauge(
            "smoothscale_operator_migration_first_eta_timestamp_seconds",
            "While a migration runs: the first completion time estimated for it.",
            _APP,
            registry=r,
        )
        self.handover_pause = Histogram(
            "smoothscale_operator_handover_pause_seconds",
            "From a task's revocation to the generation that makes it active on its new pod.",
            _APP,
            registry=r,
            buckets=(0.1, 0.25, 0.5, 1, 2, 5, 10, 30, 60, 300),
        )
        self.assignor_fallbacks = Counter(
            "smoothscale_operator_assignor_fallbacks",
            "Rebalances a Kafka Streams app's group leader did not follow the published plan in.",
            _APP,
            registry=r,
        )
        self.pods_lost = Counter(
            "smoothscale_operator_pods_lost",
            "Pods gone without the operator deleting them (their tasks fail over).",
            _APP,
            registry=r,
        )
        self.kafka_errors = Counter(
            "smoothscale_operator_kafka_errors", "Rounds whose read of Kafka failed.", _APP, registry=r
        )
        self.api_errors = Counter(
            "smoothscale_operator_api_errors",
            "Kubernetes API requests that failed (not found and conflicts aside: those are answers).",
            ("verb",),
            registry=r,
        )
        for verb in ("get", "create", "update", "patch", "delete"):
            self.api_errors.labels(verb)
        ProcessCollector(registry=r)  # process_cpu_seconds_total and the others: the operator's CPU
        self._per_app: tuple[Counter | Gauge | Histogram, ...] = (
            self.rounds,
            self.rounds_repeated,
            self.pod_tasks,
            self.lag,
            self.condition,
            self.migration_progress,
            self.migration_records_left,
            self.migration_started,
            self.migration_eta,
            self.migration_first_eta,
            self.handover_pause,
            self.assignor_fallbacks,
            self.pods_lost,
            self.kafka_errors,
            self.plan_duration,
            self.plans,
            self.generation,
            self.publications,
            self.warmups,
            self.handovers,
            self.handover_polls,
            self.pods_leaving,
            self.scrape_failures,
            self.reconcile_errors,
        )

    def forget(self, app: AppRef) -> None:
        """Drop every series of an app whose reconciler stopped."""
        labels = (app.namespace, app.name)
        for metric in self._per_app:
            for label_set in label_sets(metric):
                if label_set[:2] == labels:
                    metric.remove(*label_set)

    def exposition(self) -> bytes:
        return generate_latest(self.registry)


def label_sets(metric: Counter | Gauge | Histogram) -> list[tuple[str, ...]]:
    # prometheus-client keeps its children in `_metrics`; there is no public listing of label sets.
    return [tuple(labels) for labels in metric._metrics]


@asynccontextmanager
async def serve_metrics(metrics: OperatorMetrics, host: str, port: int) -> AsyncIterator[int]:
    """Serve `/metrics` on host:port (0 picks a free port) in the running loop; yields the bound port."""

    async def handle(_: web.Request) -> web.Response:
        return web.Response(body=metrics.exposition(), headers={"Content-Type": CONTENT_TYPE_LATEST})

    application = web.Application()
    application.router.add_get("/metrics", handle)
    runner = web.AppRunner(application, access_log=None)
    await runner.setup()
    try:
        site = web.TCPSite(runner, host, port)
        await site.start()
        yield int(runner.addresses[0][1])
    finally:
        await runner.cleanup()
