"""The operator in the simulation: an adapter that runs the operator's own round on the simulated cluster.

Every round is the real operator's step (`control.step.step`), on an observation built from what the
simulated cluster shows, as the reconciler builds its own from the API server and the pods' metrics: the
app's spec (`simulated_spec`: the scenario's topology, planner settings and `scaling`, with the `replicas`
and template revision the user set), every pod the API lists (a crashed pod, or one in a zone that is down,
is listed, not ready, and its metrics cannot be scraped), the metrics of the pods that run, the publication
in force, and Kafka's facts (each task's changelog length, its input partitions' zones). The step decides
the pod set (scale-down stabilisation included), whether and what to plan (the planner runs inline), the
next generation and the status; this module only carries out what it returns, as the reconciler does:
`podset.py` the pod-set steps, the engine the publication. Between rounds `poll` asks the pods a hand-over
waits on, as the reconciler's polls do (`control.step.poll`).

What the operator remembers is the step's memory (`RoundMemory`). A restart (the drafts' leader crash)
starts a fresh memory but keeps the publication, which lives in the assignment ConfigMap.

What differs between the strategies the simulator compares is theirs alone (`strategies`): the baselines
(`eager`, `kip441`) switch off the step's catch-up trigger (`RoundConfig.catch_up_after`), `eager` its probe
too (`RoundConfig.probing`) and gates what it publishes (`RoundConfig.aim`); `smoothscale` is the operator
as it runs.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Protocol

from smoothscale.assignor.models import Plan, PlannerConfig, Snapshot, Task
from smoothscale.assignor.planner import plan as make_plan
from smoothscale.contract.publication import EMPTY, Publication
from smoothscale.control import step as control_step
from smoothscale.control.failover import Failover
from smoothscale.control.handover import is_settled
from smoothscale.control.object_names import ordinal_of
from smoothscale.control.observed import FailureReason, PodMetrics, ScrapeFailure, ScrapeResult
from smoothscale.control.pods import PodInfo
from smoothscale.control.probing import fingerprint, holders
from smoothscale.control.progress import Progress
from smoothscale.control.scaling import PodSetPlan
from smoothscale.control.snapshot import observed_clients
from smoothscale.control.step import KafkaView, Observation, RoundConfig
from smoothscale.resource import (
    PodTemplate,
    Runtime,
    ScalingSpec,
    StreamsAppSpec,
    SubtopologySpec,
    TopologySpec,
    assignment_spec,
    planner_config,
)
from smoothscale.simulation.strategies import Strategy

DOWN = ScrapeFailure(FailureReason.UNREACHABLE, "the pod is down (crashed, or its zone is)")
"""What scraping a pod that is listed but does not run yields."""


@dataclass(frozen=True, slots=True)
class PodReport:
    """One pod as the operator sees it."""

    name: str
    zone: str
    leaving_since: float | None  # simulation seconds
    acked: int  # the generation the pod reports as fully applied (-1: none yet)
    incarnation: int  # unique, renewed by every crash: the pod object is a new one (its uid)
    revision: str = "0"  # its template's
    leaving_reason: str | None = None  # the operator's mark's `LeavingReason`; None for a person's
    ready: bool = True  # up, and it has read its assignment
    created: float = 0.0  # simulation seconds


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


@dataclass(frozen=True, slots=True)
class WakeResult:
    publication: Publication | None = None
    pod_set: PodSetPlan | None = None
    plan_reason: str | None = None  # set when this round planned (a `PlanTrigger`)


def simulated_spec(
    config: PlannerConfig, tasks: Sequence[Task], scaling: ScalingSpec, *, kafka_rebalances: bool
) -> tuple[StreamsAppSpec, KafkaView]:
    """The StreamsApp spec of the simulated app (its `replicas` are set each round), and what the operator
    reads from Kafka about it: each task's changelog length, and the zones of its input partitions' replicas
    (a task reads partition p of its subtopology's input topics `<subtopology>-in-<k>`)."""
    subtopologies: dict[str, list[Task]] = {}
    for task in tasks:
        subtopologies.setdefault(task.subtopology, []).append(task)
    racks: dict[str, list[list[str]]] = {}
    for name, members in subtopologies.items():
        for task in sorted(members, key=lambda t: int(t.id.rsplit("_", 1)[1])):
            for k, zones in enumerate(task.input_partition_racks):
                racks.setdefault(f"{name}-in-{k}", []).append(list(zones))
    assignment, timeout = assignment_spec(config)
    spec = StreamsAppSpec(
        replicas=0,
        runtime=Runtime.KAFKA_STREAMS if kafka_rebalances else Runtime.CLIENT_LIBRARY,
        template=PodTemplate.model_validate({"spec": {"containers": [{"name": "app", "image": "sim"}]}}),
        topology=TopologySpec(
            subtopologies=[
                SubtopologySpec(
                    name=name,
                    partitions=len(members),
                    stateful=members[0].stateful,
                    weight=members[0].weight,
                    input_topics=[f"{name}-in-{k}" for k in range(len(members[0].input_partition_racks))],
                )
                for name, members in subtopologies.items()
            ]
        ),
        assignment=assignment,
        scaling=scaling if timeout is None else scaling.model_copy(update={"scale_down_timeout": timeout}),
    )
    kafka = KafkaView(racks=racks, changelog_offsets={t.id: t.changelog_offsets for t in tasks})
    return spec, kafka


def renewals(
    listed: Sequence[PodReport], running: Mapping[str, PodReport], now: float, lease: float
) -> dict[str, str]:
    """Each listed pod's lease renewal token: a running pod renews every third of its lease (the token
    changes then), a pod that is down renewed last as it went down (a crash renews its incarnation: the
    operator sees that renewal in its round at the crash, and times the lease from there, as it times the
    last change of a pod's Lease)."""
    period = lease / 3
    return {
        p.name: f"{p.incarnation}@{now // period:.0f}" if p.name in running else str(p.incarnation)
        for p in listed
    }


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
        startup_grace: float = 0.0,
        round_interval: float = 0.0,
        failover: float | None = None,
    ) -> None:
        """`scaling`: the StreamsApp's `spec.scaling` (its defaults when None); `kafka_rebalances`: the pods
        run Kafka Streams (`spec.runtime: KafkaStreams`), whose cooperative rebalance hands tasks over: each
        plan is published in one generation, as the operator does; `startup_grace`: the operator's setting
        (a scale-out's plan waits that long at most for its new pods to report); `round_interval`: the
        scrape interval (a migration's ETA waits for the round that sees a copy caught up); `failover`:
        seconds after which a lost pod's tasks start elsewhere (its lease, or its Kafka session:
        `control.failover`; None: never, they wait for it)."""
        self.strategy = strategy
        planned = strategy.planner_config(config)
        self.spec, self.kafka = simulated_spec(
            planned, tasks, scaling or ScalingSpec(), kafka_rebalances=kafka_rebalances
        )
        self.config = planner_config(self.spec)
        self.round_config = RoundConfig(
            startup_grace=startup_grace,
            probing=strategy.probes,
            catch_up_after=strategy.catch_up_after,
            aim=strategy.gate,
            status=False,
            round_interval=round_interval,
            failover=None if failover is None else Failover(failover),
        )
        self.epoch = epoch
        self.app = app
        self.memory = control_step.initial_memory(epoch)
        self.published: Publication = EMPTY
        self.plans = 0
        self._wanted: AppSpec | None = None
        self._generation = 0
        """The spec's `metadata.generation`: one more at each change the user makes."""
        self._infos: dict[PodReport, PodInfo] = {}
        self.progress: list[tuple[float, Progress | None]] = []
        """Each round's migration progress (simulation seconds) while one runs, and the first round after
        it (None): what `benchmarks/eta_bench.py` compares with the actual end."""

    def restart(self, now: float) -> None:
        """The operator starts again: a fresh memory; the publication is the ConfigMap's."""
        self.memory = control_step.initial_memory(self._instant(now))

    def _instant(self, seconds: float) -> datetime:
        return self.epoch + timedelta(seconds=seconds)

    # -- observations, in the core's terms --------------------------------------------------------------

    def pod_infos(self, pods: list[PodReport]) -> list[PodInfo]:
        """The pods as the API lists them: running (a crashed one restarts in place, not ready meanwhile),
        on a node named after their zone; a leaving pod carries its mark's time (to the microsecond: the
        simulated clock's). A pod that has not changed since the last round is the same record."""
        infos = {p: self._infos.get(p) or self._info(p) for p in pods}
        self._infos = infos
        return list(infos.values())

    def _info(self, p: PodReport) -> PodInfo:
        return PodInfo(
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
            created=self._instant(p.created),
        )

    def observe(self, now: float, view: View, wanted: AppSpec) -> Observation:
        """What the operator's round observes: the spec the user set, the pods listed, the metrics of those
        that run (a pod listed but down cannot be scraped), the publication in force, Kafka's facts."""
        if wanted != self._wanted:
            self._wanted, self._generation = wanted, self._generation + 1
            self.spec = self.spec.model_copy(update={"replicas": wanted.replicas})
        listed = view.listed_pods()
        running = {p.name: p for p in view.running_pods()}
        failover = self.round_config.failover
        results: dict[str, ScrapeResult] = {
            p.name: (
                PodMetrics(
                    lags=view.lags(p.name),
                    generation=running[p.name].acked if running[p.name].acked >= 0 else None,
                )
                if p.name in running
                else DOWN
            )
            for p in listed
        }
        return Observation(
            now=self._instant(now),
            app=self.app,
            spec=self.spec,
            problems=None,
            spec_generation=self._generation,
            status_generation=self.published.generation,
            previous_status=None,
            pods=self.pod_infos(listed),
            zones={p.zone: p.zone for p in listed},
            results=results,
            published=self.published,
            revision=wanted.revision,
            kafka=self.kafka,
            urls={p.name: p.name for p in listed},
            renewals=None if failover is None else renewals(listed, running, now, failover.seconds),
        )

    def next_expiry(self, now: float) -> float | None:
        """When the next lease (or session) the operator counts runs out, in simulation seconds (None:
        none runs, or nothing fails over): a round then fails the pod's tasks over, as the operator's timer
        (or Kafka's coordinator) does."""
        failover = self.round_config.failover
        if failover is None:
            return None
        expiry = self.memory.leases.next_expiry(self._instant(now), failover)
        return None if expiry is None else (expiry - self.epoch).total_seconds()

    # -- the round, and the polls between rounds --------------------------------------------------------

    def round(self, now: float, view: View, wanted: AppSpec) -> WakeResult:
        """One round of the operator (a scrape, or a change of the app or its pods that its watches see):
        the step's decisions; a publication it decides is written at once."""
        seen = self.observe(now, view, wanted)
        decisions, self.memory, _ = control_step.step_planning_inline(
            self.memory, seen, self.round_config, self._plan
        )
        if decisions.progress is not None or (self.progress and self.progress[-1][1] is not None):
            self.progress.append((now, decisions.progress))
        if decisions.publish is not None:
            self._written(decisions.publish, seen.now)
        planned = decisions.planned
        return WakeResult(decisions.publish, decisions.pod_set, planned.trigger if planned else None)

    def poll(self, now: float, view: View) -> Publication | None:
        """Between rounds: the generations the pods a hand-over waits on report (none from a pod that is
        down), and the next generation once one has acknowledged."""
        awaited = self.memory.waits.awaited(self.published)
        if not awaited:
            return None
        running = {p.name: p.acked for p in view.running_pods()}
        generations = {pod: g if (g := running.get(pod, -1)) >= 0 else None for pod in awaited}
        polled = control_step.poll(self.memory, self.published, generations, self.round_config)
        self.memory = polled.memory
        if polled.publish is not None:
            self._written(polled.publish, self._instant(now))
        return polled.publish

    def _plan(self, snapshot: Snapshot) -> Plan:
        self.plans += 1
        return self.strategy.planned(make_plan(snapshot))

    def _written(self, publication: Publication, now: datetime) -> None:
        self.published = publication
        self.memory = control_step.after_publishing(self.memory, now)

    # -- what the simulator measures ------------------------------------------------------------------

    def in_flight(self) -> bool:
        """Whether the publication still has to catch up with the plan (worth polling before the scrape)."""
        desired = self.memory.desired
        return desired is not None and not is_settled(self.published, desired)

    def at_rest(self, view: View, wanted: AppSpec) -> bool:
        """The last plan completes the rebalance, is fully published and applied, every pod listed runs,
        nobody is leaving, no scale-down is held (`scaleDownStabilization`) and every pod runs the spec's
        template (a rolling restart is done)."""
        memory = self.memory.plan
        if memory is None or not memory.plan.stable or self.in_flight() or self.memory.hold.since is not None:
            return False
        listed = view.listed_pods()
        if any(p.leaving_since is not None or p.revision != wanted.revision or not p.ready for p in listed):
            return False
        if len(view.running_pods()) != len(listed):
            return False
        infos = self.pod_infos(listed)
        clients = observed_clients(infos, {}, {p.zone: p.zone for p in listed}, holders(self.published))
        if fingerprint(clients) != memory.fingerprint:
            return False
        return all(p.acked >= self.published.generation for p in listed)
