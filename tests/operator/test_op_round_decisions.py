"""The decisions that used to live in the reconciler, now the control core's (`control.step`), checked as
pure functions of what a round observed: which scrape failures count, which vanished pods are lost, and,
between rounds, which old owners acknowledged a revocation and what is published then."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime, timedelta

from step_testkit import listed_pod, observation

from smoothscale.assignor.models import Plan, Snapshot
from smoothscale.contract.publication import ClientAssignment, Publication, Revocation
from smoothscale.control import step as control_step
from smoothscale.control.handover import HandOverWait
from smoothscale.control.observed import FailureReason, PodMetrics, ScrapeFailure, ScrapeResult
from smoothscale.control.pods import PodInfo
from smoothscale.control.probing import PlanMemory
from smoothscale.operator.podset import template_revision
from smoothscale.resource import load_spec

APP = "orders"
NOW = datetime(2026, 11, 26, 12, 0, tzinfo=UTC)
SPEC = load_spec(
    {
        "replicas": 3,
        "template": {"spec": {"containers": [{"name": "app", "image": "orders:1"}]}},
        "topology": {"subtopologies": [{"name": "0", "partitions": 3}]},
    }
)
REVISION = template_revision(SPEC)
PUBLISHED = Publication(
    generation=4,
    assignment={
        "orders-0": ClientAssignment(active=["0_0"]),
        "orders-1": ClientAssignment(active=["0_1"]),
        "orders-2": ClientAssignment(active=["0_2"]),
    },
)
DOWN = ScrapeFailure(FailureReason.UNREACHABLE, "connection refused")


def pod(ordinal: int, *, ready: bool = True) -> PodInfo:
    return listed_pod(APP, ordinal, REVISION, ready=ready)


def seen(
    pods: list[PodInfo], results: dict[str, ScrapeResult], published: Publication = PUBLISHED, at: float = 0
) -> control_step.Observation:
    return observation(APP, SPEC, REVISION, NOW + timedelta(seconds=at), pods, results, published)


def no_planner(snapshot: Snapshot) -> Plan:
    raise AssertionError("no plan expected")


def test_a_failed_scrape_counts_for_a_ready_pod_or_one_holding_tasks_never_for_one_starting() -> None:
    published = PUBLISHED.model_copy(
        update={"assignment": {**PUBLISHED.assignment, "orders-3": ClientAssignment()}}
    )
    pods = [pod(0), pod(1, ready=False), pod(2), pod(3, ready=False)]
    results: dict[str, ScrapeResult] = {
        "orders-0": DOWN,  # ready
        "orders-1": DOWN,  # not ready, but holds 0_1
        "orders-2": PodMetrics(generation=4),
        "orders-3": DOWN,  # still starting, holds nothing
    }
    memory = control_step.initial_memory(NOW)
    decisions, memory = control_step.step(
        memory, seen(pods, results, published), control_step.RoundConfig(), no_planner
    )
    assert sorted(decisions.failures) == ["orders-0", "orders-1"]
    assert memory.failing == {"orders-0", "orders-1"}
    assert decisions.planned is None, "planning waits for the holders' metrics"


def test_a_pod_that_vanished_is_lost_unless_the_operator_deleted_it() -> None:
    metrics: dict[str, ScrapeResult] = {f"{APP}-{n}": PodMetrics(generation=4) for n in range(3)}
    memory = replace(control_step.initial_memory(NOW), known_pods=frozenset({f"{APP}-{n}" for n in range(4)}))
    memory = replace(memory, deleted_by_us=frozenset({f"{APP}-3"}))
    pods = [pod(0), pod(2)]  # orders-1 vanished; orders-3 too, deleted by the operator
    decisions, after = control_step.step(
        memory,
        seen(pods, {p.name: metrics[p.name] for p in pods}),
        control_step.RoundConfig(),
        _plan,
    )
    assert decisions.lost == ("orders-1",)
    assert [e.reason for e in decisions.events if e.reason == "PodLost"] == ["PodLost"]
    assert after.known_pods == {"orders-0", "orders-2"} and after.deleted_by_us == frozenset()


def _plan(snapshot: Snapshot) -> Plan:
    from smoothscale.assignor.planner import plan  # noqa: PLC0415

    return plan(snapshot)


def test_a_poll_publishes_the_next_generation_once_the_old_owner_acknowledged() -> None:
    """0_1 moves from orders-1 to orders-2: generation 5 revoked it; the poll between rounds decides."""
    revoking = Publication(
        generation=5,
        assignment={
            "orders-0": ClientAssignment(active=["0_0"]),
            "orders-1": ClientAssignment(),
            "orders-2": ClientAssignment(active=["0_2"], standby=["0_1"]),
        },
        revoking={"0_1": Revocation(owner="orders-1", generation=5)},
    )
    desired = {
        "orders-0": ClientAssignment(active=["0_0"]),
        "orders-1": ClientAssignment(),
        "orders-2": ClientAssignment(active=["0_1", "0_2"]),
    }
    plan = Plan.model_construct(assignment=desired, stable=True, followup=None)
    waits = HandOverWait(
        alive=frozenset(desired),
        acked=dict.fromkeys(desired, 4),
        urls={pod: f"http://{pod}" for pod in desired},
        status_generation=5,
        published_at=NOW,
    )
    memory = replace(
        control_step.initial_memory(NOW), plan=PlanMemory(1, (), NOW, plan, frozenset()), waits=waits
    )
    assert memory.waits.awaited(revoking) == {"orders-1"}
    silent = control_step.poll(memory, revoking, {"orders-1": None})
    assert (silent.acknowledged, silent.publish) == (frozenset(), None)
    assert silent.memory.waits.polls == 1
    stopped = control_step.poll(silent.memory, revoking, {"orders-1": 5})
    assert stopped.acknowledged == {"orders-1"}
    assert stopped.publish is not None and stopped.publish.generation == 6
    assert stopped.publish.active_owner() == {"0_0": "orders-0", "0_1": "orders-2", "0_2": "orders-2"}
    assert control_step.after_publishing(stopped.memory, NOW).waits.polls == 0


def test_a_leaving_kafka_streams_pod_is_retired_only_once_it_runs_the_generation_that_moved_its_tasks() -> (
    None
):
    """Kafka Streams: the plan moving orders-2's task away is published in one generation, and Kafka revokes
    it in the rebalance that follows. Deleted before that, orders-2 would stop the task unhanded, and the
    group would take its session timeout to reassign it."""
    spec = load_spec(
        {
            "replicas": 2,
            "runtime": "KafkaStreams",
            "template": {"spec": {"containers": [{"name": "app", "image": "orders:1"}]}},
            "topology": {"subtopologies": [{"name": "0", "partitions": 3}]},
        }
    )
    moved = Publication(
        generation=5,
        assignment={
            "orders-0": ClientAssignment(active=["0_0", "0_2"]),
            "orders-1": ClientAssignment(active=["0_1"]),
            "orders-2": ClientAssignment(),
        },
    )
    leaving = replace(
        pod(2), leaving="2026-11-26T11:59:00Z", leaving_reason="ScaleDown", revision=template_revision(spec)
    )
    pods = [replace(pod(n), revision=template_revision(spec)) for n in (0, 1)] + [leaving]

    def retired(orders_2_runs: int) -> list[str]:
        results: dict[str, ScrapeResult] = {
            "orders-0": PodMetrics(generation=5),
            "orders-1": PodMetrics(generation=5),
            "orders-2": PodMetrics(generation=orders_2_runs),
        }
        observed = replace(seen(pods, results, moved), spec=spec, revision=template_revision(spec))
        decisions, _ = control_step.step(
            control_step.initial_memory(NOW), observed, control_step.RoundConfig(), _plan
        )
        assert decisions.pod_set is not None
        return [retirement.pod for retirement in decisions.pod_set.retire]

    assert retired(orders_2_runs=4) == [], "Kafka may still have orders-2 run 0_2"
    assert retired(orders_2_runs=5) == ["orders-2"]
