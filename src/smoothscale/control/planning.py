"""Whether to plan this round: the probing trigger, held while a holder's metrics are missing, skipped while
no pod stays or while the first plan or a scale-out waits for pods that start together. One function,
called by the operator's reconciler and by the simulator alike, so that a figure the simulator prints is a
figure of the operator's own decisions.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import dataclass, replace
from datetime import datetime

from smoothscale.assignor.models import CatchUpTrigger
from smoothscale.contract.publication import Publication

from .probing import (
    PlanMemory,
    PlanTrigger,
    caught_up_moves,
    fingerprint,
    first_plan_waits,
    missing_holders,
    new_pods_wait,
    plan_trigger,
)
from .snapshot import ClientObservation


@dataclass(frozen=True)
class PlanningInput:
    memory: PlanMemory | None
    """The last plan (None at start-up and after the operator restarted)."""
    spec_generation: int
    clients: Sequence[ClientObservation]
    """The pods taking part in planning, as `snapshot.observed_clients` gives them."""
    published: Publication
    reported: Collection[str]
    """Pods whose metrics arrived this round."""
    staying: Collection[str]
    """Pods that are not leaving, being deleted or stopped."""
    acceptable_recovery_lag: int
    catch_up_trigger: CatchUpTrigger
    now: datetime
    waited: float
    """Seconds since the operator started looking after the app (the first plan's grace counts from it)."""
    startup_grace: float
    starting: Collection[str] = ()
    """Staying pods created less than `startup_grace` seconds ago (a scale-out's new pods)."""
    probing: bool = True
    """Plan again when the last plan's follow-up probe is due."""
    catch_up: bool = True
    """Plan again as soon as a copy the last plan waits for has caught up."""
    tasks: frozenset[str] | None = None
    """The tasks of the topology to plan with (see `plan_trigger`)."""
    racks_changed: bool = False
    """The input partitions' racks read from Kafka differ from those the last plan used."""
    waiting_for_kafka: bool = False
    """`spec.kafka` is set and its first read has not finished: planning waits (a few timeouts at most)."""
    moments: Sequence[datetime | None] = ()
    """When the caller's clock-driven inputs (`starting`, `waited`, `catch_up`) may change: the decision's
    `recheck_at` counts them."""


@dataclass(frozen=True)
class PlanningDecision:
    due: PlanTrigger | None = None
    """Why a plan is due (None: the last plan stands)."""
    plan: bool = False
    """Plan now: `due` is set and nothing holds it."""
    held_for: tuple[str, ...] = ()
    """Pods holding published tasks that reported no metrics: planning is held until they do or are gone."""
    waits: str | None = None
    """Why a plan that is due is not made yet, in words (`explain` says it)."""
    recheck_at: datetime | None = None
    """The first moment after `now` at which the same observation may decide otherwise: the follow-up
    probe, or one of the input's `moments` (None: none)."""


def decide_planning(given: PlanningInput) -> PlanningDecision:
    """Whether to plan now, why, and when to decide again if nothing else changes."""
    decided = _decide(given)
    probe = given.memory.next_probe if given.memory is not None and given.probing else None
    later = [m for m in (*given.moments, probe) if m is not None and m > given.now]
    return replace(decided, recheck_at=min(later)) if later else decided


def _decide(given: PlanningInput) -> PlanningDecision:
    memory = given.memory
    ready = (
        given.catch_up
        and memory is not None
        and bool(
            caught_up_moves(
                memory.plan,
                {c.pod: c.lags for c in given.clients},
                given.acceptable_recovery_lag,
                given.catch_up_trigger,
            )
        )
    )
    due = plan_trigger(
        memory,
        given.spec_generation,
        fingerprint(given.clients),
        ready,
        given.now,
        probing=given.probing,
        tasks=given.tasks,
    )
    if due is None and given.racks_changed:
        due = PlanTrigger.KAFKA_RACKS_CHANGED
    if due is None:
        return PlanningDecision()
    if given.waiting_for_kafka:
        return PlanningDecision(due, waits="Kafka's first read (spec.kafka) has not finished")
    missing = missing_holders(given.published, [c.pod for c in given.clients], given.reported)
    if missing:
        return PlanningDecision(due, held_for=tuple(missing), waits=f"no metrics from {', '.join(missing)}")
    if not any(c.leaving_since is None for c in given.clients):
        # no pod that stays is scheduled yet: there is nowhere to put tasks
        return PlanningDecision(due, waits="no pod that stays can take tasks")
    if first_plan_waits(given.published, given.staying, given.reported, given.waited, given.startup_grace):
        return PlanningDecision(due, waits="the first plan waits for every pod to report (start-up grace)")
    if new_pods_wait(given.published, [c.pod for c in given.clients], given.starting, given.reported):
        return PlanningDecision(due, waits="new pods are starting (start-up grace)")
    return PlanningDecision(due, plan=True)
