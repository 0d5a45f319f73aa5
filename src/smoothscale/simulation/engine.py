"""The discrete-event loop: a clock, a queue of scheduled happenings, and the physics in between.

Scheduled happenings are the scenario's events and their follow-ups, pods applying a published generation,
and operator wake-ups (a scrape every `scrapeIntervalSeconds`, polls every `handoverPollSeconds` while a
hand-over is in flight, and `ackDelaySeconds` after a pod a hand-over waits on applied its revocation: the
operator polls those pods closely, so it learns of the acknowledgment that much later). Between two of them
the cluster evolves at constant rates, stopping at every internal change (a restore finishing, a backlog
drained). Happenings at the same instant run in a fixed
order (events, follow-ups, applies, wake-ups) and ties keep scheduling order, so that one seed always gives
one result. Invariants are checked at every instant anything changed.
"""

from __future__ import annotations

import heapq
import itertools
import random
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime

import numpy as np

from smoothscale.assignor.models import Task
from smoothscale.contract.publication import ClientAssignment, Publication
from smoothscale.simulation import invariants
from smoothscale.simulation.autoscalers import Action, Autoscaler, AutoscaleRun, load_sample
from smoothscale.simulation.events import FollowUp, Script
from smoothscale.simulation.metrics import Recorder, SimulationResult
from smoothscale.simulation.operator_loop import Operator, PodReport
from smoothscale.simulation.podset import carry_out
from smoothscale.simulation.scenario import Event, OperatorRestart, Scenario
from smoothscale.simulation.state import ACTIVE, STANDBY, BoolArray, Cluster, Pod, PodArrays, Tasks
from smoothscale.simulation.strategies import make_strategy

EPOCH = datetime(2026, 1, 1, tzinfo=UTC)
"""Wall-clock instant of simulated time 0, for the planner's timestamps."""


@dataclass(frozen=True, slots=True)
class _Apply:
    pod: str
    incarnation: int
    publication: Publication | None  # None: whatever is published when the pod reads it (a booting pod)


@dataclass(frozen=True, slots=True)
class _Wake:
    scrape: bool
    acknowledged: bool = False  # the poll that sees a revoked owner's acknowledgment


@dataclass(frozen=True, slots=True)
class _Expiry:
    """A lease (or session) the operator counts runs out: a round fails the lost pod's tasks over."""


@dataclass(frozen=True, slots=True)
class _EventAt:
    index: int
    event: Event


@dataclass(frozen=True, slots=True)
class _FollowUpOf:
    index: int
    action: FollowUp


_Happening = _EventAt | _FollowUpOf | _Apply | _Wake | _Expiry
_ORDER = {_EventAt: 0, _FollowUpOf: 1, _Apply: 2, _Wake: 3, _Expiry: 4}


@dataclass(order=True, slots=True)
class _Scheduled:
    time: float
    order: int
    seq: int
    what: _Happening = field(compare=False)


class _Observed:
    """The operator's window on the cluster (`operator_loop.View`)."""

    def __init__(self, cluster: Cluster) -> None:
        self.cluster = cluster

    def listed_pods(self) -> list[PodReport]:
        return [self._report(p) for p in self.cluster.present()]

    def running_pods(self) -> list[PodReport]:
        return [self._report(p) for p in self.cluster.up()]

    def _report(self, p: Pod) -> PodReport:
        return PodReport(
            p.name,
            self.cluster.zones[p.zone],
            p.leaving_since,
            p.applied_generation,
            p.incarnation,
            p.revision,
            p.leaving_reason,
            ready=p.up and p.applied_generation >= 0,
            created=p.created,
        )

    def lags(self, pod: str) -> dict[str, int]:
        return self.cluster.reported_lags(self.cluster.pods[self.cluster.by_name[pod]])


@dataclass(frozen=True)
class _HoldingEverything:
    """The cluster at the start, as the operator's first round sees it: every pod up, ready and holding
    every stateful task's state (lag 0), so that its first plan (through the step) is the balanced, stable
    one an app that has long been running would have."""

    view: _Observed
    everything: dict[str, int]

    def listed_pods(self) -> list[PodReport]:
        return [replace(p, ready=True) for p in self.view.listed_pods()]

    def running_pods(self) -> list[PodReport]:
        return [replace(p, ready=True) for p in self.view.running_pods()]

    def lags(self, pod: str) -> dict[str, int]:
        return self.everything


def build_tasks(scenario: Scenario, rng: random.Random) -> Tasks:
    """Tasks `<subtopology>_<partition>`, with seeded changelog sizes and input replica zones."""
    zones = scenario.zones
    jitter = scenario.topology.changelog_jitter
    models: list[Task] = []
    remote: list[list[float]] = []
    rates: list[float] = []
    for name, sub in zip(scenario.subtopology_names(), scenario.topology.subtopologies, strict=True):
        for partition in range(sub.partitions):
            size = round(sub.changelog_records * (1 + jitter * rng.uniform(-1, 1))) if sub.stateful else 0
            k = min(sub.replication_factor, len(zones))
            racks = [
                sorted(rng.sample(zones, k), key=zones.index) for _ in range(sub.input_partitions_per_task)
            ]
            remote.append([sum(zone not in r for r in racks) / len(racks) for zone in zones])
            rates.append(sub.input_records_per_second)
            models.append(
                Task(
                    id=f"{name}_{partition}",
                    subtopology=name,
                    stateful=sub.stateful,
                    changelog_offsets=size,
                    input_partition_racks=racks,
                    weight=sub.weight,
                )
            )
    return Tasks(
        models=models,
        ids=[t.id for t in models],
        stateful=np.array([t.stateful for t in models], dtype=np.bool_),
        size=np.array([t.changelog_offsets for t in models], dtype=np.float64),
        input_rate=np.array(rates, dtype=np.float64),
        weight=np.array([t.weight for t in models], dtype=np.float64),
        backlog=np.zeros(len(models), dtype=np.float64),
        remote=np.array(remote, dtype=np.float64).reshape(len(models), len(zones)),
    )


class Simulation:
    def __init__(
        self, scenario: Scenario, strategy: str, seed: int = 0, *, check_invariants: bool = True
    ) -> None:
        self.scenario = scenario
        self.seed = seed
        self.check = check_invariants
        self.rng = random.Random(seed)
        self.cluster = Cluster(list(scenario.zones), build_tasks(scenario, self.rng))
        self.view = _Observed(self.cluster)
        self.script = Script(scenario, self.cluster)
        self.operator = Operator(
            make_strategy(strategy, scenario.operator.replan_min_interval_seconds),
            scenario.planner_config(),
            self.cluster.tasks.models,
            EPOCH,
            scenario.app,
            scaling=scenario.scaling,
            kafka_rebalances=scenario.runtime == "KafkaStreams",
            startup_grace=scenario.operator.startup_grace_seconds,
            round_interval=scenario.operator.scrape_interval_seconds,
            failover=scenario.failover_seconds(),
        )
        config = self.operator.config
        self.recorder = Recorder(
            self.cluster, config.acceptable_recovery_lag, config.max_warmup_replicas, self._owner_down
        )
        self._owners_seen: tuple[Publication, PodArrays, BoolArray] | None = None
        self.now = 0.0
        self._queue: list[_Scheduled] = []
        self._seq = itertools.count()
        self._poll_at: float | None = None
        self._next_tick = scenario.operator.scrape_interval_seconds
        self._scripted = 0  # events and follow-ups still to happen
        self._expiry_at: float | None = None  # the round due when a lease the operator counts runs out
        self._initial_owners: dict[str, str] = {}
        self.autoscaling: AutoscaleRun | None = None

    def attach_autoscaler(self, autoscaler: Autoscaler, lag_target: float) -> AutoscaleRun:
        """Let `autoscaler` set `replicas` (every `autoscaler.interval`, at a scrape), as it would through the
        scale subresource; the run it returns accounts for its actions and figures."""
        self.autoscaling = AutoscaleRun(autoscaler, lag_target)
        return self.autoscaling

    def _owner_down(self) -> BoolArray:
        """Per task: whether the publication in force makes a pod that is down its active owner."""
        published, pods = self.operator.published, self.cluster.pod_arrays()
        seen = self._owners_seen
        if seen is not None and seen[0] is published and seen[1] is pods:
            return seen[2]
        cluster = self.cluster
        down = {p.name for p in cluster.present() if not p.up}
        mask = np.zeros(len(cluster.tasks.ids), dtype=np.bool_)
        for task, owner in published.active_owner().items():
            if owner in down:
                mask[cluster.task_index[task]] = True
        self._owners_seen = (published, pods, mask)
        return mask

    # -- scheduling --------------------------------------------------------------------------------

    def _at(self, time: float, what: _Happening) -> None:
        heapq.heappush(self._queue, _Scheduled(time, _ORDER[type(what)], next(self._seq), what))

    def _apply_delay(self) -> float:
        operator = self.scenario.operator
        return operator.apply_delay_seconds + self.rng.uniform(0, operator.apply_jitter_seconds)

    def _boot(self) -> None:
        """Pods that just started read whatever is published when they get to it."""
        for pod in self.script.booted:
            self._at(self.now + self._apply_delay(), _Apply(pod.name, pod.incarnation, None))
        self.script.booted.clear()

    # -- the run -----------------------------------------------------------------------------------

    def run(self) -> SimulationResult:
        self._start()
        for index, event in enumerate(self.scenario.events):
            self._at(event.at, _EventAt(index, event))
            self._scripted += 1
        self._at(self._next_tick, _Wake(scrape=True))
        end = self.scenario.duration_seconds or self.scenario.max_duration_seconds
        while self._queue and self._queue[0].time <= end:
            instant = self._queue[0].time
            self._advance_to(instant)
            while self._queue and self._queue[0].time == instant:
                self._handle(heapq.heappop(self._queue).what)
            self._after_change()
            if self.scenario.duration_seconds is None and not self._scripted and not self.recorder.waiting:
                break
        if self.scenario.duration_seconds is not None:
            self._advance_to(end)
        if self.recorder.timeline[-1].t < self.now:
            self.recorder.sample(self.now)  # the end state, which may fall between two scrapes
        return self._result()

    def _start(self) -> None:
        """A running app: the pods the operator creates for `replicas`, each holding a balanced, stable,
        caught-up assignment, published as gen 1."""
        scenario, cluster, operator = self.scenario, self.cluster, self.operator
        decided = operator.round(0.0, self.view, self.script.spec).pod_set
        assert decided is not None  # the publication is known: the step decides the pod set
        carry_out(decided, self.script, 0.0, timeout=None, check=self.check)
        self.script.booted.clear()  # they start with generation 1, below
        everything = {t.id: 0 for t in cluster.tasks.models if t.stateful}
        publication = operator.round(
            0.0, _HoldingEverything(self.view, everything), self.script.spec
        ).publication
        assert publication is not None  # every pod reports: the step plans and publishes generation 1
        for pod in cluster.up():
            cluster.apply(pod, 1, publication.assignment.get(pod.name, ClientAssignment()))
        copies = cluster.copies
        standby_lag = np.minimum(float(scenario.initial_standby_lag_records), cluster.tasks.size[copies.task])
        copies.lag = np.where(
            copies.role == ACTIVE, 0.0, np.where(copies.role == STANDBY, standby_lag, copies.lag)
        )
        cluster.changed()
        self._initial_owners = publication.active_owner()
        self.recorder.sample(0.0)

    def _advance_to(self, instant: float) -> None:
        while self.now < instant:
            change = self.cluster.next_change()
            step = min(change, instant - self.now)
            self.recorder.integrate(step)
            self.cluster.advance(step)
            if change < instant - self.now:
                self.now += change
                self._after_change()
            else:
                self.now = instant

    def _after_change(self) -> None:
        if self.check:
            invariants.check_step(self.cluster, self.now)
        self.recorder.skew()
        if (
            self.recorder.waiting
            and self.operator.at_rest(self.view, self.script.spec)
            and self.cluster.rates().processing.all()
        ):
            self.recorder.balanced(self.now, self.operator.published.assignment)

    def _handle(self, what: _Happening) -> None:
        if isinstance(what, _EventAt):
            self._event(what.index, what.event)
        elif isinstance(what, _FollowUpOf):
            self._scripted -= 1
            self.script.follow_up(what.action)
            self._pods_changed()
            self.recorder.follow_up_done(what.index, self.now)
        elif isinstance(what, _Apply):
            self._apply(what)
        elif isinstance(what, _Expiry):
            self._expiry_at = None
            self._round()
        else:
            self._wake(what.scrape, periodic=not what.acknowledged)

    def _event(self, index: int, event: Event) -> None:
        self._scripted -= 1
        if isinstance(event, OperatorRestart):
            self.operator.restart(self.now)
        follow_ups = self.script.apply(index, event, self.now)
        self._pods_changed()
        for delay, action in follow_ups:
            self._at(self.now + delay, _FollowUpOf(index, action))
            self._scripted += 1
        self.recorder.event(index, event.type, self.now, len(follow_ups))

    def _apply(self, what: _Apply) -> None:
        pod: Pod = self.cluster.pods[self.cluster.by_name[what.pod]]
        if not pod.up or pod.incarnation != what.incarnation:
            return  # a crashed pod never applies what it had not applied before crashing
        publication = what.publication or self.operator.published
        if publication.generation > pod.applied_generation:
            booting = pod.applied_generation < 0
            self.cluster.apply(
                pod, publication.generation, publication.assignment.get(pod.name, ClientAssignment())
            )
            revoking = self.operator.published.revoking.values()
            if any(r.owner == pod.name and r.generation <= publication.generation for r in revoking):
                self._at(self.now + self.scenario.operator.ack_delay_seconds, _Wake(False, acknowledged=True))
            if booting:
                self._pods_changed()  # it is ready now: a swap may drain an old pod for it

    def _wake(self, scrape: bool, *, periodic: bool = True) -> None:
        operator, cluster = self.operator, self.cluster
        if scrape:
            self._next_tick = self.now + self.scenario.operator.scrape_interval_seconds
            self._at(self._next_tick, _Wake(scrape=True))
            self._round()
            self.recorder.sample(self.now)
            self._autoscale()
        else:
            if periodic:
                self._poll_at = None
            publication = operator.poll(self.now, self.view)
            if publication is not None:
                self._publish(publication)
        waiting_for_acks = any(p.applied_generation < operator.published.generation for p in cluster.up())
        poll = self.now + self.scenario.operator.handover_poll_seconds
        if (operator.in_flight() or waiting_for_acks) and self._poll_at is None and poll < self._next_tick:
            self._poll_at = poll
            self._at(poll, _Wake(scrape=False))

    def _autoscale(self) -> None:
        """The attached autoscaler's evaluation, when due; a change of `replicas` wakes a round."""
        run = self.autoscaling
        if run is None:
            return
        run.account(self.cluster, self.now)
        if self.now < run.next_at:
            return
        run.next_at = self.now + run.autoscaler.interval
        spec = self.script.spec
        migrating = not self.operator.at_rest(self.view, spec)
        warmups = self.operator.config.max_warmup_replicas
        wanted = run.autoscaler.evaluate(
            load_sample(self.cluster, self.now, spec.replicas, warmups, migrating)
        )
        if wanted is not None and wanted != spec.replicas:
            run.actions.append(Action(self.now, spec.replicas, wanted))
            self.script.spec = replace(spec, replicas=wanted)
            self._pods_changed()

    def _pods_changed(self) -> None:
        """The app or its pods changed: the operator, woken by its watches, runs a round at once."""
        self._round()

    def _round(self) -> None:
        """One round of the operator's step, carried out: the pod-set steps (booted pods then read the
        assignment), then the generation it decided."""
        result = self.operator.round(self.now, self.view, self.script.spec)
        if result.pod_set is not None and not result.pod_set.empty:
            timeout = self.operator.config.scale_down_timeout_seconds
            carry_out(result.pod_set, self.script, self.now, timeout=timeout, check=self.check)
        self._boot()
        if result.plan_reason is not None:
            reasons = self.recorder.plans_by_reason
            reasons[result.plan_reason] = reasons.get(result.plan_reason, 0) + 1
        if result.publication is not None:
            self._publish(result.publication)
        # Running pods renew their leases (a round always sees it): only a pod that is down can expire.
        lost = len(self.cluster.up()) < len(self.cluster.present())
        expiry = self.operator.next_expiry(self.now) if lost else None
        if expiry is not None and (self._expiry_at is None or expiry < self._expiry_at):
            self._expiry_at = expiry
            self._at(expiry, _Expiry())

    def _publish(self, publication: Publication) -> None:
        if self.check:
            invariants.check_publication(publication, self.now)
        self.recorder.generations += 1
        for pod in self.cluster.up():
            self._at(self.now + self._apply_delay(), _Apply(pod.name, pod.incarnation, publication))

    def _result(self) -> SimulationResult:
        recorder = self.recorder
        recorder.finish()
        balanced = all(o.balanced_at is not None for o in recorder.outcomes[-1:])
        if self.check and balanced:
            invariants.check_all_processed(self.cluster, self.now)
        took, bound, ratio = recorder.overall()
        return SimulationResult(
            scenario=self.scenario.name,
            strategy=self.operator.strategy.name,
            seed=self.seed,
            end_seconds=self.now,
            balanced=balanced,
            downtime_task_seconds=recorder.restore_downtime
            + recorder.handover_downtime
            + recorder.failover_downtime,
            restore_downtime_task_seconds=recorder.restore_downtime,
            handover_downtime_task_seconds=recorder.handover_downtime,
            failover_downtime_task_seconds=recorder.failover_downtime,
            time_to_balance_seconds=took,
            lower_bound_seconds=bound,
            ratio_to_lower_bound=ratio,
            records_restored=recorder.records_restored,
            cross_zone_records=recorder.cross_zone_records,
            generations_published=recorder.generations,
            plans=self.operator.plans,
            plans_by_reason=dict(sorted(recorder.plans_by_reason.items())),
            peak_task_skew=recorder.peak_skew,
            peak_pod_load=recorder.peak_load,
            moved_actives=sum(
                owner != self._initial_owners.get(task)
                for task, owner in self.operator.published.active_owner().items()
            ),
            events=recorder.outcomes,
            timeline=recorder.timeline,
        )


def simulate(
    scenario: Scenario, strategy: str, seed: int = 0, *, check_invariants: bool = True
) -> SimulationResult:
    """Run one scenario under one strategy (`eager`, `kip441`, `smoothscale`); deterministic for a seed."""
    return Simulation(scenario, strategy, seed, check_invariants=check_invariants).run()
