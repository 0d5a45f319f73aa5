"""What the operator reports: status and conditions, Events, the journal, its own metrics, its settings."""

from __future__ import annotations

import dataclasses
import json
import types
from datetime import UTC, datetime, timedelta
from pathlib import Path

import aiohttp
from op_testkit import pod_record

from smoothscale.assignor.models import PlanStats, RackUnknown
from smoothscale.contract.publication import EMPTY, ClientAssignment, Publication, Revocation
from smoothscale.control.events import (
    EventType,
    publication_event,
    rack_events,
    scrape_events,
    spec_events,
)
from smoothscale.control.observed import FailureReason, PodMetrics, ScrapeFailure
from smoothscale.control.status import (
    Leaving,
    PlanOutcome,
    Problem,
    StatusInput,
    active_lag,
    build_status,
    degraded,
    leaving_pods,
)
from smoothscale.operator.appref import AppRef
from smoothscale.operator.journal import Journal
from smoothscale.operator.metrics import OperatorMetrics, serve_metrics
from smoothscale.operator.reporting import LAG_REFRESH_SECONDS, AppReporter

NOW = datetime(2026, 11, 21, 10, 0, tzinfo=UTC)
APP = AppRef("default", "orders", "uid-1")
STATS = PlanStats(
    cross_rack_cost=20,
    active_imbalance=1.0,
    moved_actives=0,
    warmups=0,
    target_cross_rack_cost=0,
    target_active_imbalance=0.0,
)
RUNNING = Publication(
    generation=4,
    assignment={
        "orders-0": ClientAssignment(active=["0_0", "0_1"], standby=["0_2"]),
        "orders-1": ClientAssignment(active=["0_2"], standby=["0_0", "0_1"]),
    },
)
STABLE = PlanOutcome(stable=True, stats=STATS, next_probe=None, probe_reason=None)


def status_input(**changes: object) -> StatusInput:
    given = StatusInput(
        app="orders",
        observed_generation=3,
        replicas=2,
        tasks=3,
        pods=[pod_record(0), pod_record(1)],
        published=RUNNING,
        plan=STABLE,
        settled=True,
        leaving=[],
        lag_total=12,
        lag_max_task=10,
        degraded=None,
        invalid_spec=None,
        previous=None,
        now=NOW,
    )
    return dataclasses.replace(given, **changes)  # type: ignore[arg-type]


def conditions(status: object) -> dict[str, tuple[str, str]]:
    return {c.type: (c.status, c.reason) for c in status.conditions}  # type: ignore[attr-defined]


def test_a_converged_app_is_ready_and_stable() -> None:
    status = build_status(status_input())
    assert status.phase == "Running"
    assert conditions(status) == {
        "Ready": ("True", "AllTasksRunning"),
        "Stable": ("True", "Converged"),
        "Migrating": ("False", "NoTasksMoving"),
        "ScalingDown": ("False", "NoPodsLeaving"),
        "Degraded": ("False", "AllPodsReporting"),
        "InvalidSpec": ("False", "SpecValid"),
        "RackAwarenessDegraded": ("False", "RackDataComplete"),
    }
    assert all(c.observed_generation == 3 for c in status.conditions)
    assert (status.replicas, status.ready_replicas, status.selector) == (2, 2, "smoothscale.io/app=orders")
    assert status.assignment is not None
    assert (
        status.assignment.generation,
        status.assignment.active_tasks,
        status.assignment.standby_tasks,
    ) == (4, 3, 3)
    assert status.assignment.cross_rack_cost == 20 and status.probing is None
    assert status.lag is not None and (status.lag.total, status.lag.max_task) == (12, 10)
    body = status.model_dump(mode="json", by_alias=True)
    assert body["conditions"][0]["lastTransitionTime"] == "2026-11-21T10:00:00Z"


def test_a_migration_reports_probing_leaving_pods_and_hand_overs() -> None:
    probe = NOW + timedelta(minutes=10)
    moving = RUNNING.model_copy(
        update={
            "assignment": {
                **RUNNING.assignment,
                "orders-0": ClientAssignment(active=["0_0"], standby=["0_2"]),
            },
            "revoking": {"0_1": Revocation(owner="orders-0", generation=4)},
        }
    )
    status = build_status(
        status_input(
            published=moving,
            plan=PlanOutcome(
                stable=False, stats=STATS, next_probe=probe, probe_reason="1 warmup(s) restoring"
            ),
            settled=False,
            pods=[pod_record(0, leaving="2026-11-21T09:59:00Z"), pod_record(1), pod_record(2)],
            leaving=[Leaving("orders-0", NOW - timedelta(minutes=1), NOW + timedelta(minutes=9))],
        )
    )
    assert status.phase == "ScalingDown"
    found = conditions(status)
    assert found["Migrating"] == ("True", "HandOverInProgress")
    assert found["Stable"] == ("False", "HandOverInProgress")
    assert found["ScalingDown"] == ("True", "PodsLeaving")
    assert found["Ready"] == ("False", "TasksUnassigned")
    assert status.probing is not None and status.probing.next_probe_time == probe
    assert status.leaving[0].pod == "orders-0" and status.leaving[0].deadline == NOW + timedelta(minutes=9)
    assert status.autoscaling is not None and status.autoscaling.migrating


def test_problems_win_the_phase_and_transition_times_move_only_on_change() -> None:
    first = build_status(status_input())
    later = NOW + timedelta(minutes=5)
    same = build_status(status_input(previous=first, now=later))
    assert same.conditions == first.conditions
    degraded = build_status(
        status_input(
            previous=first, now=later, degraded=Problem("MetricsUnavailable", "no metrics from orders-1")
        )
    )
    assert degraded.phase == "Degraded"
    by_type = {c.type: c for c in degraded.conditions}
    assert by_type["Degraded"].last_transition_time == later
    assert by_type["Ready"].last_transition_time == NOW
    invalid = build_status(status_input(degraded=Problem("X", "y"), invalid_spec=Problem("SpecInvalid", "z")))
    assert invalid.phase == "Invalid"
    not_ready = build_status(status_input(pods=[pod_record(0), pod_record(1, ready=False)], plan=None))
    assert conditions(not_ready)["Ready"] == ("False", "PodsNotReady")
    assert conditions(not_ready)["Stable"] == ("Unknown", "NotPlanned")


def test_each_generation_gets_one_event_named_after_its_most_notable_step() -> None:
    placed = publication_event(EMPTY, RUNNING)
    assert (placed.type, placed.reason) == (EventType.NORMAL, "TasksPlaced")
    warming = RUNNING.model_copy(
        update={
            "generation": 5,
            "assignment": {**RUNNING.assignment, "orders-2": ClientAssignment(warmup=["0_1"])},
        }
    )
    assert publication_event(RUNNING, warming).reason == "WarmupsStarted"
    revoking = warming.model_copy(
        update={
            "generation": 6,
            "assignment": {
                **warming.assignment,
                "orders-0": ClientAssignment(active=["0_0"], standby=["0_2"]),
            },
            "revoking": {"0_1": Revocation(owner="orders-0", generation=6)},
        }
    )
    started = publication_event(warming, revoking)
    assert started.reason == "HandOverStarted" and "0_1 from orders-0" in started.message
    moved = revoking.model_copy(
        update={
            "generation": 7,
            "assignment": {**revoking.assignment, "orders-2": ClientAssignment(active=["0_1"])},
            "revoking": {},
        }
    )
    done = publication_event(revoking, moved)
    assert done.reason == "TasksMoved" and "0_1 on orders-2" in done.message
    assert done.message.startswith("generation 7:")
    barrier = publication_event(EMPTY, Publication(generation=9))
    assert (barrier.type, barrier.reason) == (EventType.WARNING, "AssignmentBarrier")


def test_metrics_failures_and_spec_problems_are_reported_when_they_start_and_end() -> None:
    failure = ScrapeFailure(FailureReason.UNREACHABLE, "GET ...: refused")
    started = scrape_events(set(), {"orders-1": failure}, {"orders-1": failure})
    assert [(e.type, e.reason) for e in started] == [(EventType.WARNING, "MetricsUnavailable")]
    assert scrape_events({"orders-1"}, {"orders-1": failure}, {"orders-1": failure}) == []
    recovered = scrape_events({"orders-1"}, {}, {"orders-1": PodMetrics()})
    assert [e.reason for e in recovered] == ["MetricsRecovered"]
    assert scrape_events({"orders-1"}, {}, {}) == [], "a pod that is gone did not recover"

    invalid = spec_events(None, ["spec.replicas: bad"])
    assert [(e.type, e.reason) for e in invalid] == [(EventType.WARNING, "InvalidSpec")]
    assert spec_events(["spec.replicas: bad"], ["spec.replicas: bad"]) == []
    assert [e.reason for e in spec_events(["spec.replicas: bad"], None)] == ["SpecValid"]


def test_the_journal_writes_one_json_object_per_line(tmp_path: Path) -> None:
    path = tmp_path / "journal" / "operator.jsonl"
    journal = Journal(stdout=False, path=path, clock=lambda: NOW)
    journal.record("plan", APP, 3, reason="FirstPlan", stable=True)
    journal.record("scaling", APP, 3, step="create", pod="orders-0", reason="MissingPod")
    journal.close()
    records = [json.loads(line) for line in path.read_text().splitlines()]
    assert records[0] == {
        "ts": "2026-11-21T10:00:00Z",
        "kind": "plan",
        "namespace": "default",
        "app": "orders",
        "generation": 3,
        "reason": "FirstPlan",
        "stable": True,
    }
    assert records[1]["step"] == "create"


async def test_the_operators_metrics_are_served_and_forgotten_with_their_app() -> None:
    metrics = OperatorMetrics()
    metrics.plan_duration.labels("default", "orders").observe(0.02)
    metrics.generation.labels("default", "orders").set(7)
    metrics.scrape_failures.labels("default", "orders", "Unreachable").inc()
    metrics.pods_leaving.labels("default", "other").set(1)
    async with (
        serve_metrics(metrics, "127.0.0.1", 0) as port,
        aiohttp.ClientSession() as session,
        session.get(f"http://127.0.0.1:{port}/metrics") as response,
    ):
        text = await response.text()
    assert 'smoothscale_operator_assignment_generation{app="orders",namespace="default"} 7.0' in text
    assert 'smoothscale_operator_plan_duration_seconds_count{app="orders",namespace="default"} 1.0' in text
    assert "smoothscale_operator_scrape_failures_total" in text
    metrics.forget(APP)
    text = metrics.exposition().decode()
    assert 'app="orders"' not in text and 'app="other"' in text


class _RecordingApi:
    def __init__(self) -> None:
        self.patches: list[dict[str, object]] = []

    async def patch(self, path: str, body: dict[str, object]) -> dict[str, object]:
        self.patches.append(body)
        return body


async def test_a_change_of_lag_alone_is_written_at_most_every_refresh_interval() -> None:
    api = _RecordingApi()
    context = types.SimpleNamespace(api=api, metrics=OperatorMetrics())
    reporter = AppReporter(APP, context, lambda: 4)  # type: ignore[arg-type]
    first = build_status(status_input())
    await reporter.write_status(first, NOW)
    await reporter.write_status(build_status(status_input(previous=first)), NOW + timedelta(seconds=1))
    assert len(api.patches) == 1, "nothing changed"
    soon = NOW + timedelta(seconds=5)
    await reporter.write_status(build_status(status_input(lag_total=900, now=soon, previous=first)), soon)
    assert len(api.patches) == 1, "only the lag moved"
    later = NOW + timedelta(seconds=LAG_REFRESH_SECONDS)
    await reporter.write_status(build_status(status_input(lag_total=900, now=later, previous=first)), later)
    assert len(api.patches) == 2
    problem = Problem("MetricsUnavailable", "x")
    await reporter.write_status(
        build_status(status_input(degraded=problem, now=later, previous=first)), later
    )
    assert len(api.patches) == 3, "anything else is written at once"


def test_the_active_lag_and_the_leaving_pods_for_status() -> None:
    results = {
        "orders-0": PodMetrics(lags={"0_0": 5, "0_1": 7, "0_2": 100}),
        "orders-1": ScrapeFailure(FailureReason.UNREACHABLE, "down"),
    }
    assert active_lag(RUNNING, results) == (12, 7), "standbys' lags do not count, unknown ones are left out"
    pods = [
        pod_record(0, leaving="2026-11-21T09:50:00Z"),
        pod_record(1),
        pod_record(2, leaving="x", deleting=True),
    ]
    assert leaving_pods(pods, 600) == [
        Leaving("orders-0", NOW - timedelta(minutes=10), NOW),
    ]
    assert leaving_pods(pods, None)[0].deadline is None


def test_unknown_racks_are_a_condition_and_an_event_naming_them() -> None:
    """A plan made with pods of unknown zone (or inputs of unknown racks): rack awareness is off for those
    only, which the status says (RackAwarenessDegraded, naming them) and an Event says when it starts,
    changes and ends."""
    unknown = RackUnknown(pods=["orders-1"], tasks=["0_2"])
    plan = dataclasses.replace(STABLE, rack_unknown=unknown)
    status = build_status(status_input(plan=plan))
    assert conditions(status)["RackAwarenessDegraded"] == ("True", "RackDataMissing")
    message = next(c.message for c in status.conditions if c.type == "RackAwarenessDegraded")
    assert "orders-1" in message and "0_2" in message
    assert conditions(build_status(status_input()))["RackAwarenessDegraded"] == ("False", "RackDataComplete")
    assert conditions(status)["Ready"][0] == "True", "unknown racks do not make the app unready"

    started = rack_events(None, unknown)
    assert [(e.type, e.reason) for e in started] == [(EventType.WARNING, "RackAwarenessDegraded")]
    assert "orders-1" in started[0].message and "0_2" in started[0].message
    assert rack_events(unknown, unknown) == []
    ended = rack_events(unknown, RackUnknown())
    assert [(e.type, e.reason) for e in ended] == [(EventType.NORMAL, "RackAwarenessRestored")]
    assert rack_events(None, RackUnknown()) == []


def test_degraded_names_the_most_consequential_problem_and_the_pods_it_concerns() -> None:
    """Planning held beats an unreadable ConfigMap, which beats pods whose metrics failed; the message names
    the pods (sorted) and each failure with the URL tried (a Kafka Streams app scraped on the wrong port
    went Degraded without a word of where), and nothing wrong is no problem at all."""
    failures = {
        "orders-2": ScrapeFailure(FailureReason.HTTP_ERROR, "GET http://10.0.0.2:8080/metrics: HTTP 503"),
        "orders-0": ScrapeFailure(FailureReason.UNREACHABLE, "GET http://10.0.0.1:8080/metrics: refused"),
    }
    assert degraded() is None
    assert degraded(failures=failures) == Problem(
        "MetricsUnavailable",
        "no metrics from orders-0 (Unreachable: GET http://10.0.0.1:8080/metrics: refused), "
        "orders-2 (HttpError: GET http://10.0.0.2:8080/metrics: HTTP 503)",
    )
    held_failing = degraded(held_for=("orders-0",), failures=failures)
    assert held_failing is not None and "orders-0 (Unreachable: GET http://10.0.0.1:8080/metrics" in str(
        held_failing.message
    )
    unreadable = degraded(unreadable="not gzip", failures=failures)
    assert unreadable == Problem("AssignmentUnreadable", "the assignment ConfigMap cannot be read: not gzip")
    held = degraded(held_for=("orders-1",), unreadable="not gzip", failures=failures)
    assert held is not None and held.reason == "MetricsUnavailable"
    assert held.message.startswith("planning held: no metrics from orders-1, which hold tasks")
    status = build_status(status_input(degraded=held))
    condition = next(c for c in status.conditions if c.type == "Degraded")
    assert (condition.status, condition.reason, condition.message) == ("True", held.reason, held.message)
