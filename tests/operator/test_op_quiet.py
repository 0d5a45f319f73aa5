"""A steady round is not decided again: the step repeats the last round's decisions while it observes the
same and its memory is unchanged (`control.step.Quiet`), and only until its first clock-driven decision is
due. Each repeated round is checked against the round decided afresh (`_decide`, the step without the
repetition) at the same moment: the repetition must never decide differently."""

from __future__ import annotations

from dataclasses import replace
from datetime import timedelta

from test_op_round_decisions import APP, NOW, PUBLISHED, pod, seen

from smoothscale.assignor.models import Followup, Plan, Snapshot
from smoothscale.assignor.planner import plan as make_plan
from smoothscale.contract.publication import Publication
from smoothscale.control import step as control_step
from smoothscale.control.observed import PodMetrics, ScrapeResult
from smoothscale.control.pods import PodInfo

CONFIG = control_step.RoundConfig(startup_grace=30.0)


class Planner:
    """The real planner, counting its calls."""

    def __init__(self) -> None:
        self.calls = 0

    def __call__(self, snapshot: Snapshot) -> Plan:
        self.calls += 1
        return make_plan(snapshot)


def _results(published: Publication, lag: int = 0) -> dict[str, ScrapeResult]:
    return {
        name: PodMetrics(lags=dict.fromkeys(roles.active, lag), generation=published.generation)
        for name, roles in published.assignment.items()
    }


def _converged(planner: Planner) -> tuple[control_step.RoundMemory, control_step.Observation]:
    """Three pods an hour old, rounds every second until the step repeats itself; the status as written."""
    pods = [replace(pod(n), created=NOW - timedelta(hours=1)) for n in range(3)]
    memory = control_step.initial_memory(NOW - timedelta(minutes=5))
    published, status = PUBLISHED, None
    for at in range(30):
        observed = replace(seen(pods, _results(published), published, at=at), previous_status=status)
        decisions, memory = control_step.step_planning_inline(memory, observed, CONFIG, planner)
        status = decisions.status
        if decisions.publish is not None:
            published = decisions.publish
            memory = control_step.after_publishing(memory, observed.now)
        elif memory.quiet is not None:
            return memory, observed
    raise AssertionError("the app never settled")


def _afresh(memory: control_step.RoundMemory, observed: control_step.Observation) -> control_step.Decisions:
    decisions, _ = control_step.step_planning_inline(replace(memory, quiet=None), observed, CONFIG, make_plan)
    return decisions


def test_a_steady_round_repeats_the_last_decisions_and_they_are_the_ones_it_would_make() -> None:
    planner = Planner()
    memory, observed = _converged(planner)
    quiet = memory.quiet
    assert quiet is not None and quiet.until is None, "a stable plan: nothing clock-driven is pending"
    planned = planner.calls
    for later in (1, 60, 3600, 86400):
        again = replace(observed, now=observed.now + timedelta(seconds=later))
        decisions, after = control_step.step_planning_inline(memory, again, CONFIG, planner)
        assert decisions is quiet.decisions and after is memory, f"{later} s later: repeated"
        assert decisions == _afresh(memory, again), f"{later} s later: what the step decides afresh"
    assert planner.calls == planned


def test_a_changed_observation_or_memory_is_decided_again() -> None:
    memory, observed = _converged(Planner())
    quiet = memory.quiet
    assert quiet is not None and observed.published is not None
    lagging = replace(observed, results=_results(observed.published, lag=5))
    decisions, _ = control_step.step_planning_inline(memory, lagging, CONFIG, make_plan)
    assert decisions is not quiet.decisions and decisions == _afresh(memory, lagging)
    assert quiet.decisions.status is not None and decisions.status is not None
    assert decisions.status.lag != quiet.decisions.status.lag
    polled = replace(memory, waits=replace(memory.waits, polls=memory.waits.polls + 1))  # a poll, say
    decisions, _ = control_step.step_planning_inline(polled, observed, CONFIG, make_plan)
    assert decisions is not quiet.decisions, "another memory: decided again"


def test_the_follow_up_probe_is_planned_when_due_as_without_repetition() -> None:
    memory, observed = _converged(Planner())
    assert memory.plan is not None
    followup = memory.plan.plan.model_copy(
        update={"stable": False, "followup": Followup(reason="probe", probe_after_seconds=600)}
    )
    plan = replace(memory.plan, plan=followup)
    # as if the last plan had been this one: a round writes the status it shows, the next one is steady
    decisions, memory = control_step.step_planning_inline(
        replace(memory, plan=plan, quiet=None), observed, CONFIG, make_plan
    )
    assert memory.quiet is None, "the status changes: the round is not settled"
    observed = replace(observed, previous_status=decisions.status)
    _, memory = control_step.step_planning_inline(memory, observed, CONFIG, make_plan)
    quiet = memory.quiet
    assert quiet is not None and quiet.until == plan.next_probe
    before = replace(observed, now=plan.planned_at + timedelta(seconds=599))
    repeated, _ = control_step.step_planning_inline(memory, before, CONFIG, make_plan)
    assert repeated is quiet.decisions and repeated == _afresh(memory, before)
    planner = Planner()
    due = replace(observed, now=plan.planned_at + timedelta(seconds=600))
    decisions, _ = control_step.step_planning_inline(memory, due, CONFIG, planner)
    assert planner.calls == 1 and decisions.planned is not None
    assert decisions.planned.trigger == "ProbingInterval"


def test_a_pod_in_its_start_up_grace_bounds_the_repetition() -> None:
    memory, observed = _converged(Planner())
    young: list[PodInfo] = [replace(p, created=observed.now - timedelta(seconds=10)) for p in observed.pods]
    fresh = replace(observed, pods=young)
    _, memory = control_step.step_planning_inline(replace(memory, quiet=None), fresh, CONFIG, make_plan)
    quiet = memory.quiet
    assert quiet is not None and quiet.until == observed.now + timedelta(seconds=20)
    for at in (19.9, 20.0, 40.0):
        later = replace(fresh, now=observed.now + timedelta(seconds=at))
        decisions, _ = control_step.step_planning_inline(memory, later, CONFIG, make_plan)
        assert (decisions is quiet.decisions) == (at < 20), at
        assert decisions == _afresh(memory, later)


def test_a_round_in_motion_is_never_repeated() -> None:
    memory, observed = _converged(Planner())
    leaving = [replace(observed.pods[0], leaving="2026-11-26T11:00:00Z"), *observed.pods[1:]]
    unready = [replace(observed.pods[0], ready=False), *observed.pods[1:]]
    for pods in (leaving, unready):
        moving = replace(observed, pods=pods)
        _, after = control_step.step_planning_inline(replace(memory, quiet=None), moving, CONFIG, make_plan)
        assert after.quiet is None, f"{APP}: {pods[0]}"
