"""The step says when to look again (`wake_at`): the first moment at which one of its time-based rules may
decide otherwise on the same observation. An adapter that observes nothing new before that moment skips
the round (`control.step.Stepped.repeats`): the property test below checks, on random rounds, that the
skipped step would have decided nothing new (the same pod set and status, no Event, record, plan or
generation, the same memory and the same `wake_at`); the other tests check each rule's moment."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from datetime import timedelta

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_op_round_decisions import APP, NOW, PUBLISHED, REVISION, SPEC, pod, seen

from smoothscale.assignor.models import Followup
from smoothscale.assignor.planner import plan as make_plan
from smoothscale.contract.publication import Publication
from smoothscale.control import step as control_step
from smoothscale.control.failover import Failover
from smoothscale.control.observed import FailureReason, PodMetrics, ScrapeFailure, ScrapeResult
from smoothscale.control.pods import PodInfo
from smoothscale.control.status import Problem
from smoothscale.resource import scaling_policy

CONFIG = control_step.RoundConfig(startup_grace=30.0, failover=Failover(10.0))
TASKS = ("0_0", "0_1", "0_2")


def _results(published: Publication, lag: int = 0) -> dict[str, ScrapeResult]:
    return {
        name: PodMetrics(lags=dict.fromkeys(roles.active, lag), generation=published.generation)
        for name, roles in published.assignment.items()
    }


def _step(
    memory: control_step.RoundMemory, observed: control_step.Observation
) -> tuple[control_step.Decisions, control_step.RoundMemory, control_step.Stepped]:
    decisions, memory, wake_at = control_step.step_planning_inline(memory, observed, CONFIG, make_plan)
    return decisions, memory, control_step.Stepped(observed, decisions, wake_at)


def _converged() -> tuple[control_step.RoundMemory, control_step.Stepped]:
    """Three pods an hour old, a round every second, each observing the status the last one wrote, until a
    round finds the app at rest."""
    pods = [replace(pod(n), created=NOW - timedelta(hours=1)) for n in range(3)]
    memory = control_step.initial_memory(NOW - timedelta(minutes=5))
    published, status = PUBLISHED, None
    for at in range(30):
        observed = replace(seen(pods, _results(published), published, at=at), previous_status=status)
        decisions, memory, stepped = _step(memory, observed)
        status = decisions.status
        if decisions.publish is not None:
            published = decisions.publish
            memory = control_step.after_publishing(memory, observed.now)
        elif decisions.at_rest and observed.previous_status == status:
            return memory, stepped
    raise AssertionError("the app never came to rest")


def _nothing_new(stepped: control_step.Stepped, again: control_step.Decisions) -> None:
    """What a step decides again on the memory the last one left, observing the same: nothing it had not."""
    assert not (again.events or again.journal or again.lost)
    assert again.planned is None and again.plan_wanted is None and again.publish is None
    assert (
        again.pod_set == stepped.decisions.pod_set
    )  # None or empty: a step that acted on pods is not skipped
    assert again.status == stepped.decisions.status


def test_an_app_at_rest_waits_on_no_clock_and_a_later_round_decides_nothing_new() -> None:
    memory, stepped = _converged()
    assert stepped.wake_at is None, "a stable plan: no rule waits on the clock"
    for later in (1, 60, 3600, 86400):
        again = replace(stepped.seen, now=stepped.seen.now + timedelta(seconds=later))
        assert stepped.repeats(again)
        decisions, after, wake_at = control_step.step(memory, again, CONFIG)
        _nothing_new(stepped, decisions)
        assert after == memory and wake_at is None


def test_a_changed_observation_is_decided_again() -> None:
    _, stepped = _converged()
    published = stepped.seen.published
    assert published is not None
    assert not stepped.repeats(replace(stepped.seen, results=_results(published, lag=5)))
    assert not stepped.repeats(replace(stepped.seen, pods=[*stepped.seen.pods[:2]]))
    assert stepped.repeats(replace(stepped.seen, pods=list(stepped.seen.pods)))  # equal, not the same object


def test_the_follow_up_probe_is_the_moment_to_look_again_and_is_planned_then() -> None:
    memory, stepped = _converged()
    assert memory.plan is not None
    unstable = memory.plan.plan.model_copy(
        update={"stable": False, "followup": Followup(reason="probe", probe_after_seconds=600)}
    )
    plan = replace(memory.plan, plan=unstable)
    _, memory, wake_at = control_step.step(replace(memory, plan=plan), stepped.seen, CONFIG)
    assert wake_at == plan.next_probe
    due = replace(stepped.seen, now=plan.planned_at + timedelta(seconds=600))
    decisions, _, _ = control_step.step_planning_inline(memory, due, CONFIG, make_plan)
    assert decisions.planned is not None and decisions.planned.trigger == "ProbingInterval"


def test_a_pod_in_its_start_up_grace_is_a_moment_to_look_again() -> None:
    memory, stepped = _converged()
    young: list[PodInfo] = [
        replace(p, created=stepped.seen.now - timedelta(seconds=10)) for p in stepped.seen.pods
    ]
    _, _, wake_at = control_step.step(memory, replace(stepped.seen, pods=young), CONFIG)
    assert wake_at == stepped.seen.now + timedelta(seconds=20)


def test_a_leaving_timeout_and_a_lease_are_moments_to_look_again() -> None:
    memory, stepped = _converged()
    spec = SPEC.model_copy(update={"scaling": SPEC.scaling.model_copy(update={"scale_down_timeout": "2m"})})
    since = stepped.seen.now - timedelta(seconds=5)
    leaving = [replace(stepped.seen.pods[0], leaving=since.isoformat())]
    moving = replace(stepped.seen, spec=spec, pods=[*leaving, *stepped.seen.pods[1:]])
    decisions, _, wake_at = control_step.step(memory, moving, CONFIG)
    assert not decisions.at_rest and wake_at == moving.now, (
        "a pod leaving with tasks: a migration, every round"
    )
    policy = scaling_policy(spec.scaling, spec.replicas, delete_claims=False)
    published = stepped.seen.published
    assert published is not None
    _, _, wake_at = control_step.decide_pod_set(
        APP, 3, REVISION, policy, moving.pods, published, memory.plan, memory.hold, moving.now
    )
    assert wake_at == since + timedelta(minutes=2), "its scale-down timeout"
    renewing = replace(stepped.seen, renewals={p.name: "r1" for p in stepped.seen.pods})
    _, _, wake_at = control_step.step(memory, renewing, CONFIG)
    assert wake_at == stepped.seen.now + timedelta(seconds=10), "the leases run out one lease from now"


def test_a_pod_leaving_or_unready_is_not_at_rest() -> None:
    memory, stepped = _converged()
    pods = stepped.seen.pods
    for changed in (replace(pods[0], leaving="2026-11-26T11:00:00Z"), replace(pods[0], ready=False)):
        decisions, _, _ = control_step.step(memory, replace(stepped.seen, pods=[changed, *pods[1:]]), CONFIG)
        assert not decisions.at_rest, changed
    failing = replace(stepped.seen.kafka, problem=Problem("KafkaUnavailable", "login refused"))
    decisions, _, _ = control_step.step(memory, replace(stepped.seen, kafka=failing), CONFIG)
    assert not decisions.at_rest, "a failing Kafka read: read again every round, its fix seen at once"


# -- the property -------------------------------------------------------------------------------------

_POD = st.fixed_dictionaries(
    {
        "listed": st.booleans(),
        "ready": st.booleans(),
        "leaving": st.none() | st.integers(min_value=0, max_value=400),
        "age": st.integers(min_value=0, max_value=120),
        "scraped": st.sampled_from(["metrics", "metrics", "down", "none"]),
        "lags": st.lists(st.integers(min_value=0, max_value=3000), min_size=3, max_size=3),
        "acked": st.booleans(),
        "renews": st.booleans(),
    }
)
_ROUND = st.tuples(st.integers(min_value=1, max_value=90), st.lists(_POD, min_size=4, max_size=4))


def _observed(
    at: float, pods: Sequence[dict[str, object]], published: Publication, renewed: dict[str, str], index: int
) -> control_step.Observation:
    now = NOW + timedelta(seconds=at)
    listed: list[PodInfo] = []
    results: dict[str, ScrapeResult] = {}
    renewals: dict[str, str] = {}
    for ordinal, drawn in enumerate(pods):
        if not drawn["listed"] and ordinal > 0:
            continue
        leaving = drawn["leaving"]
        info = replace(
            pod(ordinal, ready=bool(drawn["ready"])),
            created=now - timedelta(seconds=int(drawn["age"])),  # type: ignore[call-overload]
            leaving=None if leaving is None else (now - timedelta(seconds=int(leaving))).isoformat(),  # type: ignore[call-overload]
        )
        listed.append(info)
        if drawn["scraped"] == "metrics":
            lags = dict(zip(TASKS, drawn["lags"], strict=True))  # type: ignore[call-overload]
            results[info.name] = PodMetrics(
                lags=lags, generation=published.generation if drawn["acked"] else None
            )
        elif drawn["scraped"] == "down":
            results[info.name] = ScrapeFailure(FailureReason.UNREACHABLE, "connection refused")
        if drawn["renews"]:
            renewed[info.name] = f"r{index}"
        renewals[info.name] = renewed.get(info.name, "r0")
    observed = seen(listed, results, published, at=at)
    return replace(observed, renewals=renewals)


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(_ROUND, min_size=1, max_size=6), st.floats(min_value=0.0, max_value=0.999))
def test_skipping_a_round_before_wake_at_with_nothing_changed_never_changes_a_decision(
    rounds: list[tuple[int, list[dict[str, object]]]], fraction: float
) -> None:
    memory = control_step.initial_memory(NOW)
    published, status, at = PUBLISHED, None, 0.0
    renewed: dict[str, str] = {}
    for index, (seconds, pods) in enumerate(rounds):
        at += seconds
        observed = replace(_observed(at, pods, published, renewed, index), previous_status=status)
        decisions, memory, stepped = _step(memory, observed)
        if decisions.publish is None and decisions.status != status:
            # the adapter writes the status: its next round observes it (the object changed)
            observed = replace(observed, previous_status=decisions.status)
            decisions, memory, stepped = _step(memory, observed)
        status = decisions.status
        if decisions.publish is not None:  # the adapter publishes: its memory changes, no round is skipped
            published = decisions.publish
            memory = control_step.after_publishing(memory, observed.now)
            continue
        if stepped.wake_at == observed.now or not (decisions.pod_set is None or decisions.pod_set.empty):
            assert not stepped.repeats(replace(observed, now=observed.now + timedelta(seconds=fraction)))
            continue  # the step wants the next round whatever it observes, or the adapter acts on pods
        until = stepped.wake_at or observed.now + timedelta(hours=1)
        later = replace(observed, now=observed.now + fraction * (until - observed.now))
        assert stepped.repeats(later)
        decisions, after, wake_at = control_step.step(memory, later, CONFIG)
        _nothing_new(stepped, decisions)
        assert after == memory and wake_at == stepped.wake_at
