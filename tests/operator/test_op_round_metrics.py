"""The operator's per-round metrics (`operator.roundmetrics`): what the alert rules and the dashboard read."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from prometheus_client.parser import text_string_to_metric_families

from smoothscale.contract.publication import ClientAssignment, Publication
from smoothscale.control.events import AppEvent, EventType
from smoothscale.control.pods import PodInfo
from smoothscale.control.progress import CopyEstimate, Progress
from smoothscale.control.step import Decisions
from smoothscale.operator.appref import AppRef
from smoothscale.operator.metrics import OperatorMetrics
from smoothscale.operator.roundmetrics import RoundMetrics
from smoothscale.resource import Condition, ConditionStatus, LagStatus, StreamsAppStatus

NOW = datetime(2026, 11, 28, 12, 0, tzinfo=UTC)
APP = AppRef("shop", "orders", "uid-1")


def samples(metrics: OperatorMetrics) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    text = metrics.exposition().decode()
    return {
        (sample.name, tuple(sorted(sample.labels.items()))): sample.value
        for family in text_string_to_metric_families(text)
        for sample in family.samples
    }


def value(metrics: OperatorMetrics, name: str, **labels: str) -> float | None:
    wanted = tuple(sorted({"namespace": "shop", "app": "orders", **labels}.items()))
    return samples(metrics).get((name, wanted))


def pod(name: str, node: str) -> PodInfo:
    return PodInfo(name, name, "orders", 0, "r", None, None, node, None, None, "Running", True, False)


def status(ready: ConditionStatus, reason: str, lag: int) -> StreamsAppStatus:
    condition = Condition(type="Ready", status=ready, last_transition_time=NOW, reason=reason, message="-")
    return StreamsAppStatus(conditions=[condition], lag=LagStatus(total=lag))


def test_a_round_sets_copies_conditions_lag_and_the_migrations_eta() -> None:
    metrics = OperatorMetrics()
    rounds = RoundMetrics(metrics, APP)
    assert value(metrics, "smoothscale_operator_assignor_fallbacks_total") == 0
    assert value(metrics, "smoothscale_operator_scrape_failures_total", reason="Unreachable") == 0
    published = Publication(
        generation=2,
        assignment={
            "orders-0": ClientAssignment(active=["0_0", "0_1"]),
            "orders-1": ClientAssignment(warmup=["0_1"]),
        },
    )
    pods = (pod("orders-0", "node-a"), pod("orders-1", "node-b"))
    progress = Progress(
        started=NOW,
        warming=(CopyEstimate("0_1", "orders-1", 3_000, 1_000.0, NOW + timedelta(seconds=3)),),
        queued=1,
        restoring=0,
        revoking=0,
        records_restored=1_000,
        records_left=4_000,
        eta=NOW + timedelta(seconds=10),
        first_eta=NOW + timedelta(seconds=8),
    )
    fallback = AppEvent(EventType.WARNING, "AssignorFallback", "fell back")
    decisions = Decisions(
        events=(fallback,),
        lost=("orders-2",),
        pods=pods,
        status=status(ConditionStatus.FALSE, "TasksUnassigned", 42),
        progress=progress,
    )
    rounds.round(decisions, published, {"node-a": "zone-a", "node-b": "zone-b"}, kafka_failed=True)
    assert value(metrics, "smoothscale_operator_rounds_total") == 1
    rounds.repeated()
    assert value(metrics, "smoothscale_operator_rounds_total") == 2
    assert value(metrics, "smoothscale_operator_rounds_repeated_total") == 1
    assert value(metrics, "smoothscale_operator_pod_tasks", pod="orders-0", zone="zone-a", role="active") == 2
    assert value(metrics, "smoothscale_operator_pod_tasks", pod="orders-1", zone="zone-b", role="warmup") == 1
    ready = {"type": "Ready", "status": "False", "reason": "TasksUnassigned"}
    assert value(metrics, "smoothscale_operator_condition", **ready) == 1
    assert value(metrics, "smoothscale_operator_lag_records") == 42
    assert value(metrics, "smoothscale_operator_migration_progress_ratio") == 0.2
    assert value(metrics, "smoothscale_operator_migration_records_left") == 4_000
    assert value(metrics, "smoothscale_operator_migration_eta_timestamp_seconds") == progress.eta.timestamp()
    first = value(metrics, "smoothscale_operator_migration_first_eta_timestamp_seconds")
    assert first == (NOW + timedelta(seconds=8)).timestamp()
    assert value(metrics, "smoothscale_operator_assignor_fallbacks_total") == 1
    assert value(metrics, "smoothscale_operator_pods_lost_total") == 1
    assert value(metrics, "smoothscale_operator_kafka_errors_total") == 1

    # the migration over, the app ready: its series go, the condition's old reason too
    after = Publication(generation=3, assignment={"orders-0": ClientAssignment(active=["0_0"])})
    done = Decisions(pods=pods[:1], status=status(ConditionStatus.TRUE, "AllTasksRunning", 0))
    rounds.round(done, after, {"node-a": "zone-a"}, kafka_failed=False)
    assert value(metrics, "smoothscale_operator_migration_eta_timestamp_seconds") is None
    assert value(metrics, "smoothscale_operator_migration_progress_ratio") is None
    assert value(metrics, "smoothscale_operator_condition", **ready) is None
    assert (
        value(
            metrics, "smoothscale_operator_condition", type="Ready", status="True", reason="AllTasksRunning"
        )
        == 1
    )
    assert (
        value(metrics, "smoothscale_operator_pod_tasks", pod="orders-1", zone="zone-b", role="warmup") is None
    )
    assert value(metrics, "smoothscale_operator_kafka_errors_total") == 1
    metrics.forget(APP)
    assert not [key for key in samples(metrics) if ("app", "orders") in key[1]]
