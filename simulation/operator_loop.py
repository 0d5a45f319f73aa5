"""The operator in the simulation: an adapter from simulated observations to the operator's control core.

Every decision is the real operator's (`smoothscale.operator.control`): which pods to create, mark leaving,
take back and retire (`scaling.plan_pod_set`, from the spec the user set and the pods the cluster lists;
`podset.py` carries the decisions out), whether to plan (`planning.decide_planning`: the probing trigger,
caught-up copies, the follow-up probe), the planner's input (`snapshot.planner_input`: a task still being
revoked counts as its old owner's active) and what to publish next (`handover.next_generation`, the
two-phase hand-over). This module only turns what the simulated cluster shows into the core's inputs and
remembers what a real operator would: its last plan and the publication. A restart (the drafts' leader
crash) forgets the plan but keeps the publication, which lives in the assignment ConfigMap.

What differs between the strategies the simulator compares is theirs alone (`strategies`): the baselines
(`eager`, `kip441`) switch off the core's catch-up trigger, `eager` its probe too and gates what it publishes;
`smoothscale` is the operator as it runs.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass, replace
from datetime import datetime, timedelta
from typing import Protocol

from smoothscale.assignor.models import Plan, PlannerConfig, Snapshot, Task
from smoothscale.assignor.planner import plan as make_plan
from smoothscale.contract.publication import EMPTY, ClientAssignment, Publication
from smoothscale.operator.control import round as core_round
from smoothscale.operator.control.autoscale import ScaleDownHold
from smoothscale.operator.control.handover import is_settled, next_generation
from smoothscale.operator.control.names import ordinal_of
from smoothscale.operator.control.planning import PlanningInput, decide_planning
from smoothscale.operator.control.pods import PodInfo, leaving_since
from smoothscale.operator.control.probing import PlanMemory, fingerprint
from smoothscale.operator.control.scaling import PodSetPlan, as_planned
from smoothscale.operator.control.snapshot import ClientObservation, planner_input
from smoothscale.operator.resource import ScalingSpec, scaling_policy
from smoothscale.simulation.strategies import Strategy


@dataclass(frozen=True, slots=True)
class PodReport:
    """One pod as the operator sees it."""

    name: str
    zone: str
    capacity: int
    leaving_since: float | None  # simulation seconds
    acked: int  # the generation the pod reports as fully applied
    incarnation: int  # unique, renewed by every crash: the pod object is a new one (its uid)
    revision: str = "0"  # its template's
    leaving_reason: str | None = None  # the operator's mark's `LeavingReason`; None for a person's
    ready: bool = True  # up, and it has read its assignment


@dataclass(frozen=True, slots=True)
class AppSpec:
    """What the pod set aims at: the spec's `replicas` and its template's revision."""

    replicas: int
    revision: str


class View(Protocol):
    """What the operator can observe of the cluster at one instant."""

    def listed_pods(self) -> list[PodReport]:
        """Every pod the API lists (a crashed pod, or one in a zone that is down, is listed, not ready)."""

    def running_pods(self) -> list[PodReport]:
        """The pods that run: they report metrics and acknowledge generations."""

    def lags(self, pod: str) -> dict[str, int]: ...


class _Lags(Mapping[str, int]):
    """A pod's reported lags, read from the view only when a decision looks at them: most scrapes decide
    from the plan alone (nothing is waiting to catch up), and reading every pod's lags is most of a scrape."""

    def __init__(self, view: View, pod: str) -> None:
        self._view, self._pod = view, pod
        self._lags: dict[str, int] | None = None

    def _read(self) -> dict[str, int]:
        if self._lags is None:
            self._lags = self._view.lags(self._pod)
        return self._lags

    def __getitem__(self, task: str) -> int:
        return self._read()[task]

    def __iter__(self) -> Iterator[str]:
        return iter(self._read())

    def __len__(self) -> int:
        return len(self._read())


@dataclass(frozen=True, slots=True)
class WakeResult:
    publication: Publication | None = None
    pod_set: PodSetPlan | None = None  # a scrape's pod-set decisions
    plan_reason: str | None = None  # set when this wake re-planned (a `PlanTrigger`)


class Operator:
    def __init__(
        self,
        strategy: Strategy,
        config: PlannerConfig,
        tasks: list[Task],
        epoch: datetime,
        app: str,
        *,
        scaling: ScalingSpec | None = None,
        kafka_rebalances: bool = False,
    ) -> None:
        """`scaling`: the StreamsApp's `spec.scaling` (its defaults when None), read as the operator reads
        it (`resource.scaling_policy`); `kafka_rebalances`: the pods run Kafka Streams (`spec.runtime:
        KafkaStreams`), whose cooperative rebalance hands tasks over: each plan is published in one
        generation, as the operator does."""
        self.strategy = strategy
        self.scaling = scaling if scaling is not None else ScalingSpec()
        self.hold = ScaleDownHold()
        self.kafka_rebalances = kafka_rebalances
        self.config = strategy.planner_config(config)
        self.tasks = tasks
        self.epoch = epoch
        self.app = app
        self.published: Publication = EMPTY
        self.plans = 0
        self._memory: PlanMemory | None = None
        self._desired: dict[str, ClientAssignment] = {}
        self._memory_version = 0
        self._idle_on: tuple[object, ...] | None = None  # inputs for which the hand-over had nothing to do
        self._settled_on: tuple[int, int] | None = None  # (memory version, generation) of `_settled`
        self._settled = False

    def restart(self) -> None:
        self._remember(None, {})
        self.hold = ScaleDownHold()

    def _remember(self, memory: PlanMemory | None, desired: dict[str, ClientAssignment]) -> None:
        self._memory, self._desired = memory, desired
        self._memory_version += 1

    def _instant(self, seconds: float) -> datetime:
        return self.epoch + timedelta(seconds=seconds)

    # -- observations, in the core's terms --------------------------------------------------------------

    def clients(
        self,
        view: View,
        pods: list[PodReport],
        *,
        lags: bool = True,
        planned: Mapping[str, PodInfo] | None = None,
    ) -> list[ClientObservation]:
        """The pods as planning observes them; with `planned` (the pod set's records after this round's
        decisions) a pod marked or taken back in this round counts as such already."""
        return [
            ClientObservation(
                pod=p.name,
                zone=p.zone,
                leaving_since=self._leaving_since(p) if planned is None else leaving_since(planned[p.name]),
                lags=_Lags(view, p.name) if lags else {},
                capacity=p.capacity,
                uid=f"{p.name}/{p.incarnation}",
            )
            for p in pods
        ]

    def _leaving_since(self, pod: PodReport) -> datetime | None:
        return None if pod.leaving_since is None else self._instant(pod.leaving_since)

    def pod_infos(self, pods: list[PodReport]) -> list[PodInfo]:
        """The pods as the operator's pod-set decisions read them: running (a crashed one restarts in
        place), on a node of their zone; a leaving pod carries its mark's time (to the microsecond: the
        simulated clock's)."""
        return [
            PodInfo(
                name=p.name,
                uid=f"{p.name}/{p.incarnation}",
                app=self.app,
                ordinal=ordinal_of(self.app, p.name),
                revision=p.revision,
                leaving=None if p.leaving_since is None else self._instant(p.leaving_since).isoformat(),
                leaving_reason=p.leaving_reason,
                node=p.zone,
                ip=None,
                metrics_port=None,
                phase="Running",
                ready=p.ready,
                deleting=False,
            )
            for p in pods
        ]

    def snapshot(self, now: float, view: View, pods: list[PodReport]) -> Snapshot:
        """The planner's input (Contract 1), built by the core from what the operator observes."""
        return planner_input(
            self._instant(now), self.config, self.tasks, self.clients(view, pods), self.published
        )

    # -- one pass of the loop -------------------------------------------------------------------------

    def wake(self, now: float, view: View, spec: AppSpec, *, scrape: bool) -> WakeResult:
        """A scrape observes everything, decides the pod set and may re-plan (seeing the pod set's decisions
        as the operator's round does); a poll between scrapes only moves a hand-over on (the operator polls
        the pods it waits on)."""
        pods = view.running_pods()
        decided = None
        reason = None
        if scrape:
            infos = self.pod_infos(view.listed_pods())
            decided = self._plan_pod_set(now, infos, spec)
            after = as_planned(infos, decided, self._instant(now))
            planned = {info.name: info for info in after if not info.deleting}
            reason = self._maybe_plan(now, view, [p for p in pods if p.name in planned], planned)
        publication = None
        acked = {p.name: p.acked for p in pods}  # a pod retired now may be processing until it is gone
        inputs = (self._memory_version, self.published.generation, tuple(sorted(acked.items())))
        if self._memory is not None and inputs != self._idle_on:
            alive = set(acked)
            aim = self.strategy.gate(self._desired, self.published, acked, alive)
            ready = {pod for pod, generation in acked.items() if generation >= 0}  # it has read one
            publication = next_generation(
                self.published,
                aim,
                acked,
                alive,
                self.published.generation,
                ready,
                kafka_rebalances=self.kafka_rebalances,
                max_warmups=self.config.max_warmup_replicas,
            )
            if publication is None:
                self._idle_on = inputs  # the same inputs give the same answer: skip them next time
            else:
                self.published = publication
        return WakeResult(publication=publication, pod_set=decided, plan_reason=reason)

    def pod_set(self, now: float, view: View, spec: AppSpec) -> PodSetPlan:
        """A round woken by a change of the app or its pods (the operator watches both): the pod-set step,
        before the next scrape plans."""
        return self._plan_pod_set(now, self.pod_infos(view.listed_pods()), spec)

    def _plan_pod_set(self, now: float, pods: list[PodInfo], spec: AppSpec) -> PodSetPlan:
        """The operator's pod-set decision (`round.decide_pod_set`), scale-down stabilisation included."""
        policy = replace(
            scaling_policy(self.scaling, spec.replicas),
            scale_down_timeout=self.config.scale_down_timeout_seconds,  # `Scenario.planner_config`'s
        )
        decided, self.hold = core_round.decide_pod_set(
            self.app,
            spec.replicas,
            spec.revision,
            policy,
            pods,
            self.published,
            self._memory,
            self.hold,
            self._instant(now),
        )
        return decided

    def _maybe_plan(
        self, now: float, view: View, pods: list[PodReport], planned: Mapping[str, PodInfo]
    ) -> str | None:
        clients = self.clients(view, pods, planned=planned)
        memory = self._memory
        decision = decide_planning(
            PlanningInput(
                memory=memory,
                spec_generation=0,
                clients=clients,
                published=self.published,
                reported=[p.name for p in pods],
                staying=[p.name for p in pods if not planned[p.name].is_leaving],
                acceptable_recovery_lag=self.config.acceptable_recovery_lag,
                catch_up_trigger=self.config.catch_up_trigger,
                now=self._instant(now),
                waited=now,
                startup_grace=0.0,
                probing=self.strategy.probes,
                catch_up=memory is None
                or self.strategy.catches_up((self._instant(now) - memory.planned_at).total_seconds()),
            )
        )
        if not decision.plan:
            return None
        snapshot = planner_input(self._instant(now), self.config, self.tasks, clients, self.published)
        plan = make_plan(snapshot)
        self.plans += 1
        self._remember(
            PlanMemory(0, fingerprint(clients), self._instant(now), plan), self.strategy.desired(plan)
        )
        return str(decision.due)

    def adopt(self, plan: Plan, publication: Publication, view: View, pods: list[PodReport]) -> None:
        """Start as if this plan had been made and published at time 0 (a cluster that is already running)."""
        self.published = publication
        clients = self.clients(view, pods, lags=False)
        self._remember(PlanMemory(0, fingerprint(clients), self.epoch, plan), dict(publication.assignment))

    # -- what the simulator measures ------------------------------------------------------------------

    def _published_as_desired(self) -> bool:
        """`is_settled` for the current plan and generation, computed once per pair (it is asked often)."""
        key = (self._memory_version, self.published.generation)
        if key != self._settled_on:
            self._settled_on = key
            self._settled = is_settled(self.published, self._desired)
        return self._settled

    def in_flight(self) -> bool:
        """Whether the publication still has to catch up with the plan (worth polling before the scrape)."""
        return self._memory is not None and not self._published_as_desired()

    def at_rest(self, view: View, spec: AppSpec) -> bool:
        """The last plan completes the rebalance, is fully published and applied, nobody is leaving, no
        scale-down is held (`scaleDownStabilization`) and every pod runs the spec's template (a rolling
        restart is done)."""
        memory = self._memory
        if memory is None or not self.strategy.is_final(memory.plan) or not self._published_as_desired():
            return False
        if self.hold.since is not None:
            return False
        pods = view.running_pods()
        if any(p.leaving_since is not None or p.revision != spec.revision for p in pods):
            return False
        if fingerprint(self.clients(view, pods, lags=False)) != memory.fingerprint:
            return False
        return all(p.acked >= self.published.generation for p in pods)
