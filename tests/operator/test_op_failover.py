"""Fail-over in the control step (`control.failover`): a pod that holds tasks and stopped renewing its lease
holds planning for one lease, then its tasks start on the other pods without its acknowledgment; one that
renews again rejoins holding nothing. Without a lease setting the step holds planning, as before."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime, timedelta

from step_testkit import listed_pod, observation

from smoothscale.assignor.planner import plan
from smoothscale.contract.publication import ClientAssignment, Publication
from smoothscale.control import step as control_step
from smoothscale.control.failover import Failover, Leases
from smoothscale.control.observed import FailureReason, PodMetrics, ScrapeFailure, ScrapeResult
from smoothscale.control.pods import PodInfo
from smoothscale.resource import load_spec, template_revision

APP = "orders"
NOW = datetime(2026, 11, 28, 12, 0, tzinfo=UTC)
SPEC = load_spec(
    {
        "replicas": 3,
        "template": {"spec": {"containers": [{"name": "app", "image": "orders:1"}]}},
        "topology": {"subtopologies": [{"name": "0", "partitions": 3, "stateful": False}]},
    }
)
REVISION = template_revision(SPEC)
PUBLISHED = Publication(
    generation=4,
    assignment={f"{APP}-{i}": ClientAssignment(active=[f"0_{i}"]) for i in range(3)},
)
DOWN = ScrapeFailure(FailureReason.UNREACHABLE, "connection refused")
LEASE = Failover(10.0)
PODS = [listed_pod(APP, i, REVISION, node="node") for i in range(3)]


def observed(
    at: float,
    results: dict[str, ScrapeResult],
    renewals: dict[str, str] | None,
    pods: list[PodInfo] = PODS,
    published: Publication = PUBLISHED,
) -> control_step.Observation:
    return observation(APP, SPEC, REVISION, NOW + timedelta(seconds=at), pods, results, published, renewals)


def lost_pod_rounds(config: control_step.RoundConfig, seconds: list[float]) -> list[control_step.Decisions]:
    """orders-0 goes silent at 0 (listed, unreachable, its lease token unchanged); the others renew."""
    memory = control_step.initial_memory(NOW)
    decided = []
    for at in seconds:
        results: dict[str, ScrapeResult] = {
            "orders-0": DOWN,
            "orders-1": PodMetrics(generation=4),
            "orders-2": PodMetrics(generation=4),
        }
        tokens = {"orders-0": "last", "orders-1": f"r{at}", "orders-2": f"r{at}"}
        decisions, memory, _ = control_step.step_planning_inline(
            memory, observed(at, results, tokens), config, plan
        )
        decided.append(decisions)
    return decided


def test_a_silent_holder_holds_planning_for_one_lease_then_its_tasks_start_elsewhere() -> None:
    config = control_step.RoundConfig(failover=LEASE)
    early, late, expired = lost_pod_rounds(config, [0.0, 9.9, 10.0])
    for held in (early, late):
        assert held.publish is None and held.planning.held_for == ("orders-0",)
    assert ("plan-held", {"reason": "FirstPlan", "pods": ["orders-0"]}) in early.journal, "journaled once"
    assert not any(kind == "plan-held" for kind, _ in late.journal)
    assert expired.publish is not None
    owners = expired.publish.active_owner()
    assert sorted(owners) == ["0_0", "0_1", "0_2"]
    assert "orders-0" not in expired.publish.assignment  # it holds nothing: it rejoins as a new pod would
    assert not expired.publish.revoking  # no acknowledgment awaited from a pod whose lease expired
    assert ("failover", {"expired": ["orders-0"], "renewed": []}) in expired.journal
    assert [e.reason for e in expired.events if e.reason.startswith("Lease")] == ["LeaseExpired"]


def test_without_a_lease_a_silent_holder_holds_planning_for_good() -> None:
    for decisions in lost_pod_rounds(control_step.RoundConfig(), [0.0, 10.0, 600.0]):
        assert decisions.publish is None and decisions.planning.held_for == ("orders-0",)


def test_a_pod_that_renews_again_rejoins_holding_nothing() -> None:
    config = control_step.RoundConfig(failover=LEASE)
    memory = control_step.initial_memory(NOW)
    results: dict[str, ScrapeResult] = {
        "orders-0": DOWN,
        **{f"{APP}-{i}": PodMetrics(generation=4) for i in (1, 2)},
    }
    for at in (0.0, 10.0):
        tokens = {"orders-0": "last", "orders-1": f"r{at}", "orders-2": f"r{at}"}
        decisions, memory, _ = control_step.step_planning_inline(
            memory, observed(at, results, tokens), config, plan
        )
    published = decisions.publish
    assert published is not None
    back = {pod: PodMetrics(generation=published.generation) for pod in ("orders-0", "orders-1", "orders-2")}
    tokens = {"orders-0": "again", "orders-1": "r20", "orders-2": "r20"}
    decisions, memory, _ = control_step.step_planning_inline(
        memory, observed(20.0, dict(back), tokens, published=published), config, plan
    )
    assert [e.reason for e in decisions.events if e.reason.startswith("Lease")] == ["LeaseRenewed"]
    assert memory.leases.expired == frozenset()


def test_leases_count_from_the_operators_first_sight_and_from_each_change() -> None:
    start = Leases().observe({"a": "1"}, ["a", "b"], NOW, LEASE)  # b has no token: first seen now
    assert start.expired == frozenset()
    assert start.next_expiry(NOW, LEASE) == NOW + timedelta(seconds=10)
    renewed = start.observe({"a": "2"}, ["a", "b"], NOW + timedelta(seconds=6), LEASE)
    assert renewed.next_expiry(NOW + timedelta(seconds=6), LEASE) == NOW + timedelta(seconds=10)  # b's
    later = renewed.observe({"a": "2"}, ["a", "b"], NOW + timedelta(seconds=10), LEASE)
    assert later.expired == frozenset({"b"})
    assert later.observe({"a": "2"}, ["a"], NOW + timedelta(seconds=16), LEASE).expired == frozenset({"a"})
    assert "b" not in later.observe({}, ["a"], NOW + timedelta(seconds=11), LEASE).seen  # no longer listed


def test_a_pod_without_a_lease_is_never_failed_over_on_one() -> None:
    """`Observation.leased`: orders-0 was created before the app had a lease (no lease variable): it renews
    none and fences nothing, so its silence holds planning as without a lease, however long it lasts."""
    config = control_step.RoundConfig(failover=LEASE)
    memory = control_step.initial_memory(NOW)
    leased = frozenset({"orders-1", "orders-2"})
    results: dict[str, ScrapeResult] = {
        "orders-0": DOWN,
        "orders-1": PodMetrics(generation=4),
        "orders-2": PodMetrics(generation=4),
    }
    for at in (0.0, 10.0, 600.0):
        tokens = {"orders-1": f"r{at}", "orders-2": f"r{at}"}
        seen = observed(at, results, tokens)
        decisions, memory, _ = control_step.step_planning_inline(
            memory, replace(seen, leased=leased), config, plan
        )
        assert decisions.publish is None and decisions.planning.held_for == ("orders-0",)
    assert memory.leases.expired == frozenset() and set(memory.leases.seen) == leased
