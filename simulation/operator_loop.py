"""The operator's control loop as it runs for real: observe, plan with the real planner, publish through the
real two-phase hand-over, retire leaving pods.

The operator sees only what a real one sees (the `View`: running pods, their zones, leaving marks, the
generation each reports as applied, and their lags) and remembers only what a real one would: its last
plan and the publication. A restart (the drafts' leader crash) forgets the plan but keeps the publication,
which lives in the assignment ConfigMap.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Protocol

from smoothscale.assignor.handover import EMPTY, Publication, is_settled, next_publication
from smoothscale.assignor.models import (
    CatchUpTrigger,
    Client,
    ClientAssignment,
    Plan,
    PlannerConfig,
    Snapshot,
    Task,
)
from smoothscale.assignor.planner import plan as make_plan
from smoothscale.simulation.strategies import Signals, Strategy


@dataclass(frozen=True, slots=True)
class PodReport:
    """One running pod as the operator sees it."""

    name: str
    zone: str
    capacity: int
    leaving_since: float | None  # simulation seconds
    acked: int  # the generation the pod reports as fully applied
    restarts: int  # Kubernetes' restart count: a restarted pod rejoins, whatever it had may be gone


class View(Protocol):
    """What the operator can observe of the cluster at one instant."""

    def running_pods(self) -> list[PodReport]: ...

    def lags(self, pod: str) -> dict[str, int]: ...

    def lag(self, pod: str, task: str) -> int | None: ...


@dataclass(slots=True)
class _Memory:
    """What a restart forgets."""

    plan: Plan | None = None
    planned_at: float = 0.0
    probe_at: float | None = None
    membership: frozenset[tuple[str, float | None, int]] = frozenset()
    restoring: frozenset[tuple[str, str]] = frozenset()  # (pod, task) copies behind at the last plan
    desired: dict[str, ClientAssignment] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class WakeResult:
    publication: Publication | None = None
    retire: tuple[str, ...] = ()
    plan_reason: str | None = None  # set when this wake re-planned


class Operator:
    def __init__(self, strategy: Strategy, config: PlannerConfig, tasks: list[Task], epoch: datetime) -> None:
        self.strategy = strategy
        self.config = strategy.planner_config(config)
        self.tasks = tasks
        self.epoch = epoch
        self.published: Publication = EMPTY
        self.plans = 0
        self._memory = _Memory()
        self._memory_version = 0
        self._idle_on: tuple[object, ...] | None = None  # inputs for which the hand-over had nothing to do
        self._settled_on: tuple[int, int] | None = None  # (memory version, generation) of `_settled`
        self._settled = False

    def restart(self) -> None:
        self._remember(_Memory())

    def _remember(self, memory: _Memory) -> None:
        self._memory = memory
        self._memory_version += 1

    def _instant(self, seconds: float) -> datetime:
        return self.epoch + timedelta(seconds=seconds)

    def snapshot(self, now: float, view: View, pods: list[PodReport]) -> Snapshot:
        """The planner's input: running pods, their lags, and the published assignment (Contract 1)."""
        clients = []
        for pod in pods:
            held = self.published.assignment.get(pod.name, ClientAssignment())
            clients.append(
                Client.model_construct(
                    id=pod.name,
                    rack=pod.zone,
                    capacity=pod.capacity,
                    leaving_since=None if pod.leaving_since is None else self._instant(pod.leaving_since),
                    lags=view.lags(pod.name),
                    active=list(held.active),
                    standby=list(held.standby),
                    warmup=list(held.warmup),
                )
            )
        return Snapshot.model_construct(
            now=self._instant(now), config=self.config, tasks=self.tasks, clients=clients
        )

    def wake(self, now: float, view: View, *, scrape: bool) -> WakeResult:
        """One pass of the loop. A scrape observes everything and may re-plan; a poll between scrapes only
        moves a hand-over on (the operator polls the pods it waits on)."""
        pods = view.running_pods()
        retire: tuple[str, ...] = ()
        reason = None
        if scrape:
            retire = tuple(p.name for p in pods if self._may_retire(p, now))
            pods = [p for p in pods if p.name not in retire]
            reason = self._plan_reason(now, view, pods)
            if reason is not None and any(p.leaving_since is None for p in pods):
                self._plan(now, view, pods)
            else:
                reason = None
        publication = None
        acked = {p.name: p.acked for p in pods}
        inputs = (self._memory_version, self.published.generation, tuple(sorted(acked.items())))
        if self._memory.plan is not None and inputs != self._idle_on:
            alive = set(acked)
            aim = self.strategy.gate(self._memory.desired, self.published, acked, alive)
            publication = next_publication(self.published, aim, acked, alive)
            if publication is None:
                self._idle_on = inputs  # the same inputs give the same answer: skip them next time
            else:
                self.published = publication
        return WakeResult(publication=publication, retire=retire, plan_reason=reason)

    def _may_retire(self, pod: PodReport, now: float) -> bool:
        """A leaving pod goes once it runs nothing (published and acknowledged) or its timeout expired."""
        if pod.leaving_since is None:
            return False
        timeout = self.config.scale_down_timeout_seconds
        if timeout is not None and now >= pod.leaving_since + timeout:
            return True
        if self.published.assignment.get(pod.name, ClientAssignment()).active:
            return False
        return all(r.owner != pod.name or pod.acked >= r.generation for r in self.published.revoking.values())

    def _plan_reason(self, now: float, view: View, pods: list[PodReport]) -> str | None:
        memory = self._memory
        signals = Signals(
            first=memory.plan is None,
            membership_changed=_membership(pods) != memory.membership,
            probe_due=memory.probe_at is not None and now >= memory.probe_at,
            caught_up=self._caught_up(view),
            since_last_plan=now - memory.planned_at,
        )
        return self.strategy.plan_reason(signals)

    def _caught_up(self, view: View) -> int:
        """Copies restoring at the last plan that are caught up now, as `catchUpTrigger` counts them: every
        one (eager), or only those of pods whose restoring copies are all caught up (batched), so that a pod
        warming several tasks causes one re-plan instead of one per task."""
        acceptable = self.config.acceptable_recovery_lag
        done: dict[str, list[bool]] = {}
        for pod, task in self._memory.restoring:
            lag = view.lag(pod, task)
            done.setdefault(pod, []).append(lag is not None and lag <= acceptable)
        if self.config.catch_up_trigger is CatchUpTrigger.BATCHED:
            return sum(len(copies) for copies in done.values() if all(copies))
        return sum(sum(copies) for copies in done.values())

    def _plan(self, now: float, view: View, pods: list[PodReport]) -> None:
        snapshot = self.snapshot(now, view, pods)
        plan = make_plan(snapshot)
        self.plans += 1
        acceptable = self.config.acceptable_recovery_lag
        lags = {client.id: client.lags for client in snapshot.clients}
        stateful = {task.id for task in self.tasks if task.stateful}
        restoring = frozenset(
            (pod, task)
            for pod, held in plan.assignment.items()
            for task in (*held.active, *held.standby, *held.warmup)
            if task in stateful and lags[pod].get(task, acceptable + 1) > acceptable
        )
        self._remember(
            _Memory(
                plan=plan,
                planned_at=now,
                probe_at=None if plan.followup is None else now + plan.followup.probe_after_seconds,
                membership=_membership(pods),
                restoring=restoring,
                desired=self.strategy.desired(plan),
            )
        )

    def adopt(self, plan: Plan, publication: Publication, pods: list[PodReport]) -> None:
        """Start as if this plan had been made and published at time 0 (a cluster that is already running)."""
        self.published = publication
        self._remember(_Memory(plan=plan, membership=_membership(pods), desired=dict(publication.assignment)))

    def _published_as_desired(self) -> bool:
        """`is_settled` for the current plan and generation, computed once per pair (it is asked often)."""
        key = (self._memory_version, self.published.generation)
        if key != self._settled_on:
            self._settled_on = key
            self._settled = is_settled(self.published, self._memory.desired)
        return self._settled

    def in_flight(self) -> bool:
        """Whether the publication still has to catch up with the plan (worth polling before the scrape)."""
        return self._memory.plan is not None and not self._published_as_desired()

    def at_rest(self, view: View) -> bool:
        """The last plan completes the rebalance, is fully published and applied, and nobody is leaving."""
        memory = self._memory
        if memory.plan is None or not self.strategy.is_final(memory.plan) or not self._published_as_desired():
            return False
        pods = view.running_pods()
        if any(p.leaving_since is not None for p in pods) or _membership(pods) != memory.membership:
            return False
        return all(p.acked >= self.published.generation for p in pods)


def _membership(pods: list[PodReport]) -> frozenset[tuple[str, float | None, int]]:
    return frozenset((p.name, p.leaving_since, p.restarts) for p in pods)
