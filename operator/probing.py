"""When to plan again, and when not to plan at all: the probing decisions, as pure functions.

The operator sees every pod's lag at every scrape, but re-planning on every scrape would let noise in the
lags move warmups around. So it plans when something relevant changed (the spec, the pods or their zones or
leaving marks), as soon as a warmup of the last plan has caught up (KIP-441's probing rebalance, triggered
by the data instead of a timer), and otherwise on the planner's follow-up delay (`probingInterval`, or
sooner for a scale-down deadline) while the plan is not stable.

It never plans on missing data: when a pod that holds tasks in the published generation cannot be scraped,
planning is held (its tasks are neither promoted elsewhere nor moved), while hand-overs already decided go on.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from enum import StrEnum

from smoothscale.assignor.handover import Publication
from smoothscale.assignor.models import ClientAssignment, Plan

from .snapshot import ClientObservation

Fingerprint = tuple[tuple[str, str, str | None], ...]


class PlanTrigger(StrEnum):
    FIRST = "FirstPlan"
    SPEC_CHANGED = "SpecChanged"
    PODS_CHANGED = "PodsChanged"
    WARMUP_CAUGHT_UP = "WarmupCaughtUp"
    PROBING_INTERVAL = "ProbingInterval"


@dataclass(frozen=True)
class PlanMemory:
    """What the last plan was made from, and what it decided."""

    spec_generation: int
    fingerprint: Fingerprint
    planned_at: datetime
    plan: Plan

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
    """The facts about the pods that change a plan: which pods, their zones, their leaving marks."""
    return tuple(
        sorted(
            (c.pod, c.zone, c.leaving_since.isoformat() if c.leaving_since is not None else None)
            for c in clients
        )
    )


def caught_up_warmups(
    desired: Mapping[str, ClientAssignment], lags: Mapping[str, Mapping[str, int]], acceptable_lag: int
) -> list[tuple[str, str]]:
    """(pod, task) warmups of the last plan whose pod now reports a lag within `acceptable_lag`."""
    return sorted(
        (pod, task)
        for pod, roles in desired.items()
        for task in roles.warmup
        if (lag := lags.get(pod, {}).get(task)) is not None and lag <= acceptable_lag
    )


def plan_trigger(
    memory: PlanMemory | None,
    spec_generation: int,
    current: Fingerprint,
    warmups_caught_up: bool,
    now: datetime,
) -> PlanTrigger | None:
    """Why to plan now, or None to keep the last plan."""
    if memory is None:
        return PlanTrigger.FIRST
    if memory.spec_generation != spec_generation:
        return PlanTrigger.SPEC_CHANGED
    if memory.fingerprint != current:
        return PlanTrigger.PODS_CHANGED
    if warmups_caught_up:
        return PlanTrigger.WARMUP_CAUGHT_UP
    probe = memory.next_probe
    if probe is not None and probe <= now:
        return PlanTrigger.PROBING_INTERVAL
    return None


def holders(published: Publication) -> set[str]:
    """Pods that hold a task in the published generation, or that a hand-over waits for."""
    pods = {
        pod for pod, roles in published.assignment.items() if roles.active or roles.standby or roles.warmup
    }
    return pods | {revocation.owner for revocation in published.revoking.values()}


def missing_holders(published: Publication, clients: Collection[str], reported: Collection[str]) -> list[str]:
    """Pods taking part in planning that hold published tasks but reported no metrics this round."""
    return sorted((holders(published) & set(clients)) - set(reported))


def desired_reachable(desired: Mapping[str, ClientAssignment], alive: Collection[str]) -> bool:
    """A plan may only be published while every pod it gives tasks to still exists."""
    alive = set(alive)
    return all(
        pod in alive for pod, roles in desired.items() if roles.active or roles.standby or roles.warmup
    )
