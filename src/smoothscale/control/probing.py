"""When to plan again, and when not to plan at all: the probing decisions, as pure functions.

The operator sees every pod's lag at every scrape, but re-planning on every scrape would let noise in the
lags move warmups around. So it plans when something relevant changed (the spec, the pods or their zones or
leaving marks), as soon as a copy the last plan is waiting for has caught up (a warmup, or a standby the
plan wants active: KIP-441's probing rebalance, triggered by the data instead of a timer; with
`catchUpTrigger: batched`, once all the copies some pod holds for it have), and otherwise on
the planner's follow-up delay (`probingInterval`, or sooner for a scale-down deadline) while the plan is not
stable.

It never plans on missing data: when a pod that holds tasks in the published generation cannot be scraped,
planning is held (its tasks are neither promoted elsewhere nor moved), while hand-overs already decided go on
(`planning.decide_planning` puts these together for one round), until the pod's lease expires: the round then
plans without it (`failover`).
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from enum import StrEnum

from smoothscale.assignor.models import CatchUpTrigger, Plan, caught_up
from smoothscale.contract.publication import ClientAssignment, Publication
from smoothscale.control.handover import is_settled

from .snapshot import ClientObservation

Fingerprint = tuple[tuple[str, str | None, str | None, str], ...]


class PlanTrigger(StrEnum):
    FIRST = "FirstPlan"
    SPEC_CHANGED = "SpecChanged"
    PODS_CHANGED = "PodsChanged"
    CAUGHT_UP = "CaughtUp"
    PROBING_INTERVAL = "ProbingInterval"
    KAFKA_RACKS_CHANGED = "KafkaRacksChanged"
    TOPOLOGY_CHANGED = "TopologyChanged"


@dataclass(frozen=True)
class PlanMemory:
    """What the last plan was made from, and what it decided."""

    spec_generation: int
    fingerprint: Fingerprint
    planned_at: datetime
    plan: Plan
    tasks: frozenset[str] = frozenset()
    """The tasks of the topology planned with (empty: not recorded). The app's reported topology can change
    (more input partitions, a new subtopology) while the spec's generation stays the same."""

    @property
    def desired(self) -> dict[str, ClientAssignment]:
        return self.plan.assignment

    @property
    def next_probe(self) -> datetime | None:
        followup = self.plan.followup
        if self.plan.stable or followup is None:
            return None
        return self.planned_at + timedelta(seconds=followup.probe_after_seconds)


def fingerprint(clients: Sequence[ClientObservation]) -> Fingerprint:
    """The facts about the pods that change a plan: which pods (a pod recreated under its name is another
    one: its uid differs), their zones, their leaving marks."""
    return tuple(
        sorted(
            (c.pod, c.zone, c.leaving_since.isoformat() if c.leaving_since is not None else None, c.uid)
            for c in clients
        )
    )


def caught_up_moves(
    plan: Plan,
    lags: Mapping[str, Mapping[str, int]],
    acceptable_lag: int,
    trigger: CatchUpTrigger = CatchUpTrigger.EAGER,
) -> list[tuple[str, str]]:
    """(pod, task) copies the plan is waiting for that have now caught up: the pod is to run the task (its
    target) or keep a standby of it, does not yet, and reports a lag within `acceptable_lag`.

    These are warmups, and also standbys that the target makes active: either way the move the plan held
    back can happen now (KIP-441's probing rebalance, triggered by the data instead of a timer). With the
    `batched` trigger a pod counts only once every such copy it holds (its warmups, its standbys to be made
    active) is caught up: one plan per pod's batch instead of one per copy; copies the warmup cap has not
    started yet are not waited for, or a pod with more moves than warmups would wait for the probe.
    """
    ready = []
    for pod, target in plan.target.items():
        now = plan.assignment.get(pod, ClientAssignment())
        reported = lags.get(pod, {})
        active, standby = set(now.active), set(now.standby)
        waiting = [t for t in target.active if t not in active]
        waiting += [t for t in target.standby if t not in standby and t not in active]
        done = [t for t in waiting if caught_up(reported.get(t), acceptable_lag)]
        if trigger is CatchUpTrigger.EAGER or {*now.warmup, *standby}.intersection(waiting).issubset(done):
            ready += [(pod, t) for t in done]
    return sorted(ready)


def plan_trigger(
    memory: PlanMemory | None,
    spec_generation: int,
    current: Fingerprint,
    moves_ready: bool,
    now: datetime,
    *,
    probing: bool = True,
    tasks: frozenset[str] | None = None,
) -> PlanTrigger | None:
    """Why to plan now, or None to keep the last plan. `probing=False` ignores the follow-up probe (only the
    simulator's eager baseline, which stops the world instead, plans without it). `tasks`, the tasks of the
    topology to plan with now, replans when they are not those of the last plan (the app's reported
    topology grew: until then the bridge finds tasks the plan does not place)."""
    if memory is None:
        return PlanTrigger.FIRST
    if memory.spec_generation != spec_generation:
        return PlanTrigger.SPEC_CHANGED
    if memory.fingerprint != current:
        return PlanTrigger.PODS_CHANGED
    if tasks is not None and memory.tasks and memory.tasks != tasks:
        return PlanTrigger.TOPOLOGY_CHANGED
    if moves_ready:
        return PlanTrigger.CAUGHT_UP
    probe = memory.next_probe
    if probing and probe is not None and probe <= now:
        return PlanTrigger.PROBING_INTERVAL
    return None


def settled(memory: PlanMemory | None, published: Publication) -> bool:
    """The last plan is stable and published as planned, with no hand-over in flight: the app is at rest (a
    rolling restart may take its next pod; status says Converged)."""
    return memory is not None and memory.plan.stable and is_settled(published, memory.desired)


def holders(published: Publication) -> set[str]:
    """Pods that hold a task in the published generation, or that a hand-over waits for."""
    pods = {
        pod for pod, roles in published.assignment.items() if roles.active or roles.standby or roles.warmup
    }
    return pods | {revocation.owner for revocation in published.revoking.values()}


def missing_holders(published: Publication, clients: Collection[str], reported: Collection[str]) -> list[str]:
    """Pods taking part in planning that hold published tasks but reported no metrics this round."""
    return sorted((holders(published) & set(clients)) - set(reported))


def new_pods_wait(
    published: Publication, clients: Collection[str], starting: Collection[str], reported: Collection[str]
) -> bool:
    """Hold a plan while pods created moments ago (`starting`, younger than the start-up grace) are not yet
    taking part (ready, with metrics reported), as long as every holder of a published task is: a
    scale-out's new pods then share the tasks in one migration, instead of each pod that comes up a little
    later re-planning the hand-over under way (tasks moved twice). A task whose holder is gone is never kept
    waiting."""
    if not set(starting) - (set(clients) & set(reported)):
        return False
    return holders(published) <= set(clients)


def first_plan_waits(
    published: Publication, staying: Collection[str], reported: Collection[str], waited: float, grace: float
) -> bool:
    """Hold an app's very first plan while some of its pods have not reported metrics yet (up to `grace`
    seconds): pods that start together then share the tasks from the first generation on, instead of the
    first one taking everything and handing most of it over again moments later."""
    return published.generation == 0 and bool(set(staying) - set(reported)) and waited < grace
