"""One round of one app, decided in one place: `step(memory, observation, config, planner)` returns everything
to do and the next memory.

The reconciler observes (the spec, the pods listed from the API server, the nodes' zones, every pod's
metrics, Kafka's facts, the publication in force, the clock), calls `step`, carries the decisions out (pod
actions, the next generation) and reports them (Events, journal, metrics, status). `smoothscale explain`
and the simulator are adapters that call the same `step` (explain on a fresh memory, the simulator every
simulated round, with `poll` between rounds). The planner is injected: the operator runs the step in a
thread (planning is CPU work), the simulator and the tests inline. `RoundConfig` holds the operator's
settings and what the simulator's baselines switch off (the catch-up trigger, the probe, what a generation
aims at); the operator runs with its defaults.

The memory (`RoundMemory`) is one immutable value: a cache or a debounce only. The publication lives in the
ConfigMap (the reconciler re-reads it), leaving times in the pods' annotations, and a restarted operator
plans afresh from what it observes.

The order of the decisions matters for safety and is the one of `docs/architecture.md` ("One round"):

1. the spec (an invalid one freezes the pod set and planning; hand-overs already decided go on) and the pods
   that disappeared without the operator deleting them (lost);
2. the scrape: which failures count (a ready pod, or one holding tasks), changelog lengths, processing rates;
3. the pod set (`scaling.plan_pod_set`, with the scale-down stabilisation window);
4. planning, when `planning.decide_planning` says so, on `planner_snapshot`;
5. the hand-over: the next generation toward the plan (`handover.HandOverWait.next`);
6. status (`status.build_status`).
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping, Sequence, Set
from dataclasses import dataclass, field, fields, replace
from datetime import datetime, timedelta
from operator import attrgetter
from typing import Any, Literal

from smoothscale.assignor.models import Plan, Snapshot
from smoothscale.contract.publication import EMPTY, ClientAssignment, Publication

from ..resource import (
    KafkaStatus,
    Runtime,
    ScalingPolicy,
    StreamsAppSpec,
    StreamsAppStatus,
    scale_down_timeout_seconds,
    scaling_policy,
)
from . import events as ev
from . import failover, streamsassignor
from .appreport import AppReport, observe_app_report, report_problems
from .assignorfallbacks import RECENT as FALLBACK_RECENT
from .autoscale import ScaleDownHold, recommended_replicas, staying_current
from .failover import Failover, Leases, without_expired
from .handover import HandOverWait
from .learnedtopology import with_reported_topology
from .observed import PodMetrics, ScrapeFailure, ScrapeResult
from .planning import PlanningDecision, PlanningInput, decide_planning
from .pods import PodInfo
from .probing import PlanMemory, fingerprint, holders, settled
from .progress import Progress, RestoreMeter, remaining_work
from .rates import ProcessRates, owner_rates
from .scaling import PodSetInput, PodSetPlan, as_planned, plan_pod_set
from .snapshot import (
    ClientObservation,
    build_snapshot,
    changelog_sizes,
    merge_end_offsets,
    observed_clients,
    task_ids,
)
from .status import (
    KafkaOutcome,
    PlanOutcome,
    Problem,
    StatusInput,
    StreamsAssignorCheck,
    active_lag,
    build_status,
    degraded,
    leaving_pods,
)
from .unknownlags import sizes_with_unknown, without_unknown_lags

Planner = Callable[[Snapshot], Plan]


@dataclass(frozen=True)
class KafkaView:
    """What the operator read from Kafka (`spec.kafka`), as the decisions need it."""

    racks: Mapping[str, list[list[str]]] = field(default_factory=dict)
    changelog_offsets: Mapping[str, int] = field(default_factory=dict)
    first_read_pending: bool = False
    problem: Problem | None = None
    read_once: bool = False
    status: KafkaStatus | None = None
    streams_assignors: Mapping[int, str | None] | None = None
    """Each broker's `group.streams.assignors` (read for apps on the streams protocol only)."""
    unknown_lags: frozenset[str] = frozenset()
    """Tasks whose changelog could not be read: their copies' lags are unknown (`unknownlags`)."""


@dataclass(frozen=True)
class Observation:
    """What one round observed of one app."""

    now: datetime
    app: str
    spec: StreamsAppSpec | None
    """The spec, when valid."""
    problems: tuple[str, ...] | None
    """What is wrong with an invalid spec (None: it is valid)."""
    spec_generation: int
    status_generation: int
    """The generation the app's status last reported as published."""
    previous_status: StreamsAppStatus | None
    pods: Sequence[PodInfo]
    zones: Mapping[str, str]
    results: Mapping[str, ScrapeResult]
    published: Publication | None
    """The publication in force; None when the ConfigMap could not be read (no pod set, plan or hand-over)."""
    unreadable: str | None = None
    """Why the ConfigMap could not be read."""
    revision: str = ""
    """The spec's template revision (`podset.template_revision`)."""
    kafka: KafkaView = field(default_factory=KafkaView)
    urls: Mapping[str, str] = field(default_factory=dict)
    """Where each running pod was scraped: the hand-over's polls between rounds ask the same addresses."""
    renewals: Mapping[str, str] | None = None
    """Each listed pod's lease renewal token, a pod that renews not left out (`failover`); None: no lease
    is read, and no pod is failed over."""


Aim = Callable[
    [Mapping[str, ClientAssignment], Publication, Mapping[str, int], Set[str]], Mapping[str, ClientAssignment]
]
"""What the next generation aims at, from the last plan's assignment, the publication in force, the
generations the pods acknowledged and the live pods (the simulator's stop-the-world baseline gates it)."""


@dataclass(frozen=True)
class RoundConfig:
    """The settings that shape decisions: the operator's, and the triggers the simulator's baselines switch
    off (the operator runs with the defaults)."""

    startup_grace: float = 0.0
    probing: bool = True
    """Plan again when the last plan's follow-up probe is due."""
    catch_up_after: float | None = 0.0
    """Seconds after a plan from which a caught-up copy the plan waits for plans again (None: never)."""
    aim: Aim | None = None
    """What each generation aims at instead of the last plan's assignment (None: that assignment)."""
    status: bool = True
    """Build the app's status (an adapter that reports none, the simulator, skips the work)."""
    round_interval: float = 0.0
    """Seconds between the periodic rounds (the scrape interval): a migration's ETA counts the wait for the
    round that sees a copy caught up (`progress`)."""
    failover: Failover | None = None
    """Fail a pod's tasks over once its lease expired (`failover`; None: hold planning while it is silent)."""


@dataclass(frozen=True)
class RoundMemory:
    """Everything the operator remembers of one app between rounds: one immutable value."""

    started_at: datetime
    last_good: StreamsAppSpec | None = None
    problems: tuple[str, ...] | None = None
    plan: PlanMemory | None = None
    planned_racks: Mapping[str, list[list[str]]] = field(default_factory=dict)
    end_offsets: Mapping[str, int] = field(default_factory=dict)
    rates: ProcessRates = field(default_factory=ProcessRates)
    hold: ScaleDownHold = field(default_factory=ScaleDownHold)
    failing: frozenset[str] = frozenset()
    app_report: AppReport = field(default_factory=AppReport)
    """What the pods' bridge reported: assignor fallbacks, the topology it learned."""
    known_pods: frozenset[str] = frozenset()
    deleted_by_us: frozenset[str] = frozenset()
    waits: HandOverWait = field(default_factory=HandOverWait)
    streams_assignor: StreamsAssignorCheck | None = None
    """The last `streamsassignor.check` that read the brokers (its Events are posted when it changes)."""
    restore: RestoreMeter = field(default_factory=RestoreMeter)
    """The measured restore rates and the running migration's progress (`progress`)."""
    quiet: Quiet | None = None
    """The last step's decisions, while a step observing the same would repeat them (`Quiet`)."""
    leases: Leases = field(default_factory=Leases)
    """The pods' lease renewals as seen (`failover`), and whose leases have expired."""

    @property
    def desired(self) -> Mapping[str, ClientAssignment] | None:
        return self.plan.desired if self.plan is not None else None


@dataclass(frozen=True)
class PlanRecord:
    """A plan this round made, for the report."""

    trigger: str
    plan: Plan
    clients: int
    tasks: int


@dataclass(frozen=True)
class Decisions:
    """Everything one round decided: to carry out, then to report."""

    events: tuple[ev.AppEvent, ...] = ()
    journal: tuple[tuple[str, Mapping[str, Any]], ...] = ()
    """(kind, fields) records for the event journal."""
    lost: tuple[str, ...] = ()
    failures: Mapping[str, ScrapeFailure] = field(default_factory=dict)
    pod_set: PodSetPlan | None = None
    """Pod actions (None: the pod set was not decided this round)."""
    pods: Sequence[PodInfo] = ()
    """The pods as the round's decisions leave them (what status reports)."""
    planned: PlanRecord | None = None
    publish: Publication | None = None
    status: StreamsAppStatus | None = None
    scraped_lag: int = 0
    """The active tasks' total lag in the generation the metrics were scraped under (the journal's: once
    this round publishes the next one, the warmups that just caught up and moved would be missing)."""
    progress: Progress | None = None
    """The migration in progress and its ETA (None while no task moves)."""


@dataclass(frozen=True)
class PollDecisions:
    """What one hand-over poll between rounds decided."""

    memory: RoundMemory
    acknowledged: frozenset[str]
    """The awaited pods that have now acknowledged their revocation."""
    publish: Publication | None


@dataclass(frozen=True)
class Quiet:
    """A steady round's decisions, which a later step repeats without deciding again while it observes what
    `seen` observed (its time aside), on the memory this one left, before `until` (None: no clock-driven
    decision is pending).

    The step is pure: the same memory and the same observation make the same decisions. So a round that
    left its memory as it found it, observing what the last one observed, decides what the last one decided,
    unless one of the decisions depends on the clock. `quiet` grants this only to a silent, settled round
    (no Event, no journal record, no pod action, no plan, no generation, the status as written: nothing in
    motion, no pod leaving, starting or unready, no scale-down held), whose only clock-driven decisions
    left are the ones `until` is the first of: the plan's follow-up probe, the catch-up delay, the start-up
    grace, a recent assignor fallback expiring. A steady app's rounds then only observe: deciding again
    every round was a fifth of a steady operator's CPU."""

    seen: Observation
    memory: RoundMemory
    decisions: Decisions
    until: datetime | None

    def repeats(self, memory: RoundMemory, seen: Observation) -> bool:
        """Whether a step of `seen` on `memory` decides what this one decided."""
        if self.until is not None and seen.now >= self.until:
            return False
        return _same(memory, self.memory, _MEMORY_FIELDS) and _same(seen, self.seen, _OBSERVED_FIELDS)


def steady(memory: RoundMemory, spec: StreamsAppSpec | None, pods: Sequence[PodInfo]) -> bool:
    """Whether the app is steady for the round about to observe `spec` and `pods`: its last step was quiet
    (`Quiet`), nothing has changed the memory since (a poll, a publication), and the spec and the pods are
    the very ones that step saw. Only then may the round read its pods at the steady cadence
    (`scrapecadence`): anything else is in motion and reads every pod."""
    quiet = memory.quiet
    return (
        quiet is not None
        and quiet.seen.spec is spec
        and quiet.seen.pods is pods
        and _same(memory, quiet.memory, _MEMORY_FIELDS)
    )


def initial_memory(now: datetime) -> RoundMemory:
    return RoundMemory(started_at=now)


def working_spec(memory: RoundMemory, spec: StreamsAppSpec | None) -> StreamsAppSpec | None:
    """The spec this round works with: the one read when valid, else the last good one (an invalid spec
    freezes the pod set and planning; what is in flight goes on, observed as before)."""
    return spec or memory.last_good


def kafka_topology(memory: RoundMemory, spec: StreamsAppSpec | None, app: str) -> StreamsAppSpec | None:
    """The spec whose topology Kafka is read for: the working spec, with the topology the app's pods
    reported when the spec leaves it out (Kafka Streams apps)."""
    working = working_spec(memory, spec)
    if working is None:
        return None
    return with_reported_topology(working, memory.app_report.topology, app) or working


def planner_snapshot(
    spec: StreamsAppSpec,
    now: datetime,
    clients: Sequence[ClientObservation],
    published: Publication,
    memory: RoundMemory,
    kafka: KafkaView,
) -> Snapshot:
    """The planner's input from one round's observations and the memory's changelog lengths and averaged
    processing rates: what the operator plans with, and what `explain` shows."""
    end_offsets = sizes_with_unknown(
        changelog_sizes(dict(memory.end_offsets), kafka.changelog_offsets),
        kafka.unknown_lags,
        spec.assignment.acceptable_recovery_lag,
    )
    return build_snapshot(spec, now, clients, published, end_offsets, memory.rates.means(), dict(kafka.racks))


def observe_scrape(memory: RoundMemory, seen: Observation, published: Publication) -> RoundMemory:
    """The memory with this round's changelog ends and processing rates folded in."""
    reports = [r.end_offsets for r in seen.results.values() if isinstance(r, PodMetrics)]
    return replace(
        memory,
        end_offsets=merge_end_offsets(memory.end_offsets, reports),
        rates=memory.rates.observe(owner_rates(seen.results, published), seen.now),
    )


def decide_pod_set(
    app: str,
    replicas: int,
    revision: str,
    policy: ScalingPolicy,
    pods: Sequence[PodInfo],
    published: Publication,
    plan: PlanMemory | None,
    hold: ScaleDownHold,
    now: datetime,
    still_running: Collection[str] = (),
) -> tuple[PodSetPlan, ScaleDownHold]:
    """The pod-set steps toward `replicas` pods of `revision` (a scale-down held by the stabilisation window
    while warmups are in flight), and the window's state after this round. `still_running`: pods that may
    still run tasks the publication no longer gives them (`_not_yet_revoked`): not retired as drained."""
    warming = any(roles.warmup for roles in published.assignment.values())
    acting_on, hold = hold.replicas(
        replicas, staying_current(pods, revision), warming, policy.stabilization, now
    )
    decided = plan_pod_set(
        PodSetInput(
            app=app,
            replicas=acting_on,
            revision=revision,
            strategy=policy.strategy,
            max_surge=policy.max_surge,
            scale_down_timeout=policy.scale_down_timeout,
            delete_claims=policy.delete_claims,
            pods=pods,
            holding=holders(published) | set(still_running),
            settled=settled(plan, published),
            now=now,
        )
    )
    return decided, hold


def step(
    memory: RoundMemory, seen: Observation, config: RoundConfig, planner: Planner
) -> tuple[Decisions, RoundMemory]:
    """One round: the decisions, and the memory after it (a steady round repeats the last one's, `Quiet`)."""
    quiet = memory.quiet
    if quiet is not None and quiet.repeats(memory, seen):
        return quiet.decisions, memory
    before = replace(memory, quiet=None) if quiet is not None else memory
    decisions, after = _decide(before, seen, config, planner)
    if _same(after, before, _MEMORY_FIELDS):
        after = before  # nothing changed: the next step compares by identity, field by field
        steady = quiet_until(before, seen, config, decisions)
        if steady is not False:
            return decisions, replace(before, quiet=Quiet(seen, before, decisions, steady))
    return decisions, after


def quiet_until(
    memory: RoundMemory, seen: Observation, config: RoundConfig, decisions: Decisions
) -> datetime | Literal[False] | None:
    """Until when a step observing `seen` again, on `memory` (which the step that made `decisions` left
    unchanged), makes the same decisions: the first clock-driven decision still pending (None: none is), or
    False when the round is not silent and settled (`Quiet`). Each condition below stands for the clock's
    part in a decision: a pod leaving (its scale-down timeout), starting (the start-up grace) or unready; a
    warmup or a revocation (the hand-over's schedule, the stabilisation window); a held scale-down."""
    published = seen.published
    spec = seen.spec
    plan = memory.plan
    if (
        spec is None
        or published is None
        or plan is None
        or decisions.events
        or decisions.journal
        or decisions.lost
        or decisions.failures
        or (decisions.pod_set is not None and not decisions.pod_set.empty)
        or decisions.planned is not None
        or decisions.publish is not None
        or (decisions.status is not None and decisions.status != seen.previous_status)
        or published.revoking
        or any(roles.warmup for roles in published.assignment.values())
        or memory.waits.awaited(published)
        or memory.waits.published_at is None
        or memory.hold.since is not None
        or any(p.is_leaving or p.deleting or p.stopped or not p.ready for p in seen.pods)
    ):
        return False
    grace = timedelta(seconds=config.startup_grace)
    pending = [memory.started_at + grace]
    pending += [p.created + grace for p in seen.pods if p.created is not None]
    if config.probing and plan.next_probe is not None:
        pending.append(plan.next_probe)
    if config.catch_up_after is not None:
        pending.append(plan.planned_at + timedelta(seconds=config.catch_up_after))
    fallback_at = memory.app_report.fallbacks.last_at
    if fallback_at is not None:
        pending.append(fallback_at + FALLBACK_RECENT)
    if config.failover is not None and (expiry := memory.leases.next_expiry(seen.now, config.failover)):
        pending.append(expiry)
    due = [moment for moment in pending if moment > seen.now]
    return min(due) if due else None


def _same(a: object, b: object, fields_of: Callable[[object], tuple[object, ...]]) -> bool:
    """Equal in every field `fields_of` reads (unchanged values are the same objects: mostly identity checks,
    which the comparison of two tuples makes element by element before any `==`, in C)."""
    return fields_of(a) == fields_of(b)


def _decide(
    memory: RoundMemory, seen: Observation, config: RoundConfig, planner: Planner
) -> tuple[Decisions, RoundMemory]:
    """One round, decided."""
    events: list[ev.AppEvent] = []
    journal: list[tuple[str, Mapping[str, Any]]] = []
    spec = seen.spec
    if spec is not None:
        memory = replace(memory, last_good=spec)
    if seen.problems != memory.problems:
        events += ev.spec_events(memory.problems, seen.problems)
        journal.append(("spec", {"valid": seen.problems is None, "problems": list(seen.problems or [])}))
        memory = replace(memory, problems=seen.problems)
    memory, lost = _lost(memory, seen.pods)
    events += ev.lost_pod_events(lost)
    working = working_spec(memory, spec)
    assignor_check = streamsassignor.check(working, seen.kafka.streams_assignors)
    events += streamsassignor.events(memory.streams_assignor, assignor_check)
    memory = replace(
        memory, streams_assignor=streamsassignor.remembered(memory.streams_assignor, assignor_check)
    )
    published = seen.published if seen.published is not None else EMPTY
    failures = _failures(seen, published)
    events += ev.scrape_events(memory.failing, failures, seen.results)
    memory = observe_scrape(replace(memory, failing=frozenset(failures)), seen, published)
    app_report, reported = observe_app_report(memory.app_report, seen.results, working, seen.now)
    events += reported
    memory = replace(memory, app_report=app_report)
    if config.failover is not None and seen.renewals is not None:
        leases = memory.leases.observe(seen.renewals, [p.name for p in seen.pods], seen.now, config.failover)
        events += failover.events(memory.leases, leases)
        journal += failover.journal(memory.leases, leases)
        memory = replace(memory, leases=leases)
    pods: Sequence[PodInfo] = seen.pods
    pod_set = None
    planned = None
    decision = PlanningDecision()
    if seen.published is not None and spec is not None:
        pod_set, hold = _pod_set(spec, seen, published, memory)
        memory = replace(memory, hold=hold)
        if not pod_set.empty:
            events += ev.pod_set_events(pod_set, seen.app)
            memory = replace(memory, deleted_by_us=memory.deleted_by_us | _deletions(pod_set))
        pods = as_planned(pods, pod_set, seen.now)
        before = memory.plan
        planning = with_reported_topology(
            spec, memory.app_report.topology, seen.app
        )  # None: no tasks known yet
        if planning is not None:
            kept = without_expired(pods, memory.leases)
            decision, planned, memory = _plan(memory, seen, planning, kept, published, config, planner)
        if decision.held_for:
            journal.append(("plan-held", {"reason": str(decision.due), "pods": list(decision.held_for)}))
        if planned is not None:
            events += ev.rack_events(
                None if before is None else before.plan.rack_unknown, planned.plan.rack_unknown
            )
    publish = None
    if seen.published is not None and working is not None:
        memory = replace(
            memory, waits=_wait(memory.waits, seen, working, without_expired(pods, memory.leases))
        )
        publish = memory.waits.next(published, _aimed(config, memory, published))
    memory, progress = _progress(memory, seen, working, pods, publish or published, config)
    status = (
        _status(memory, seen, working, pods, publish or published, decision.held_for, failures, progress)
        if config.status
        else None
    )
    decisions = Decisions(
        events=tuple(events),
        journal=tuple(journal),
        lost=tuple(sorted(lost)),
        failures=failures,
        pod_set=pod_set,
        pods=pods,
        planned=planned,
        publish=publish,
        status=status,
        scraped_lag=active_lag(published, seen.results)[0],
        progress=progress,
    )
    return decisions, memory


def _progress(
    memory: RoundMemory,
    seen: Observation,
    spec: StreamsAppSpec | None,
    pods: Sequence[PodInfo],
    published: Publication,
    config: RoundConfig,
) -> tuple[RoundMemory, Progress | None]:
    """The migration's progress after this round, and the memory with this round's restore rates."""
    if spec is None:
        return memory, None
    plan = memory.plan.plan if memory.plan is not None else None
    work = remaining_work(
        plan,
        published,
        {pod: r.lags for pod, r in seen.results.items() if isinstance(r, PodMetrics)},
        # the queued moves' sizes: only an unstable plan queues any (a steady round builds no dict)
        changelog_sizes(dict(memory.end_offsets), seen.kafka.changelog_offsets)
        if plan is not None and not plan.stable
        else {},
        spec.assignment.acceptable_recovery_lag,
        spec.assignment.max_warmup_replicas,
        leaving=[p.name for p in pods if p.is_leaving],
    )
    meter = memory.restore.observe(work, seen.now, [p.name for p in pods])
    progress = meter.estimate(work, seen.now, config.round_interval)
    meter = meter.promised(progress)
    return (memory if meter is memory.restore else replace(memory, restore=meter)), progress


def poll(
    memory: RoundMemory,
    published: Publication,
    generations: Mapping[str, int | None],
    config: RoundConfig = RoundConfig(),  # frozen: one shared default is safe
) -> PollDecisions:
    """Between rounds, after asking the pods a hand-over waits on (`HandOverWait.awaited`) which generation
    they have applied (None: no answer): who acknowledged, and the next generation once one has. Pods and
    the other pods' generations are the last round's: a pod gone since then is still waited for (safe),
    never taken for gone."""
    awaited = memory.waits.awaited(published)
    waits = memory.waits.polled(generations, len(generations))
    memory = replace(memory, waits=waits)
    acknowledged = frozenset(awaited - waits.awaited(published))
    publish = waits.next(published, _aimed(config, memory, published)) if acknowledged else None
    return PollDecisions(memory, acknowledged, publish)


def _aimed(
    config: RoundConfig, memory: RoundMemory, published: Publication
) -> Mapping[str, ClientAssignment] | None:
    """What the next generation aims at: the last plan's assignment, through the config's `aim` if any."""
    desired = memory.desired
    if desired is None or config.aim is None:
        return desired
    return config.aim(desired, published, memory.waits.acked, memory.waits.alive)


def after_publishing(memory: RoundMemory, now: datetime) -> RoundMemory:
    """The memory once a generation this round (or poll) decided has been written: the polls start again."""
    return replace(memory, waits=memory.waits.after_publishing(now))


def _pod_set(
    spec: StreamsAppSpec, seen: Observation, published: Publication, memory: RoundMemory
) -> tuple[PodSetPlan, ScaleDownHold]:
    policy = scaling_policy(
        spec.scaling,
        spec.replicas,
        delete_claims=spec.storage is not None and spec.storage.deletes_on_scale_down,
    )
    return decide_pod_set(
        seen.app,
        spec.replicas,
        seen.revision,
        policy,
        seen.pods,
        published,
        memory.plan,
        memory.hold,
        seen.now,
        still_running=_not_yet_revoked(seen, published) if spec.runtime is Runtime.KAFKA_STREAMS else (),
    )


def _not_yet_revoked(seen: Observation, published: Publication) -> set[str]:
    """Leaving Kafka Streams pods, alive, that have not reported running the published generation: Kafka
    may still have them run tasks the plan moved away (it is published in one generation and Kafka's
    rebalance revokes them, `handover.plan_as_published`). Retired now, such a pod would stop them before
    the rebalance hands them over, and the group would wait out its session timeout to reassign them
    (Kafka Streams sends no LeaveGroup on close): measured by `smoothscale demo --kafka --app-jar`, 10 to
    15 s without processing for every task a scale-in moved. The scale-down timeout still bounds the wait."""
    acked = {
        pod: result.generation
        for pod, result in seen.results.items()
        if isinstance(result, PodMetrics) and result.generation is not None
    }
    return {
        pod.name
        for pod in seen.pods
        if pod.is_leaving and pod.alive and acked.get(pod.name, -1) < published.generation
    }


def _lost(memory: RoundMemory, pods: Sequence[PodInfo]) -> tuple[RoundMemory, set[str]]:
    """Pods that disappeared without the operator deleting them."""
    present = frozenset(p.name for p in pods)
    gone = memory.known_pods - present
    lost = gone - memory.deleted_by_us
    return replace(memory, known_pods=present, deleted_by_us=memory.deleted_by_us - gone), set(lost)


def _failures(seen: Observation, published: Publication) -> dict[str, ScrapeFailure]:
    """Scrape failures that matter: a ready pod, or one holding tasks (a pod still starting is excused)."""
    holding = holders(published)
    ready = {p.name for p in seen.pods if p.ready}
    return {
        pod: r
        for pod, r in seen.results.items()
        if isinstance(r, ScrapeFailure) and (pod in ready or pod in holding)
    }


def _deletions(decided: PodSetPlan) -> frozenset[str]:
    return frozenset({r.pod for r in decided.retire} | set(decided.remove_stopped) | set(decided.restart))


def _plan(
    memory: RoundMemory,
    seen: Observation,
    spec: StreamsAppSpec,
    pods: Sequence[PodInfo],
    published: Publication,
    config: RoundConfig,
    planner: Planner,
) -> tuple[PlanningDecision, PlanRecord | None, RoundMemory]:
    clients = without_unknown_lags(
        observed_clients(pods, seen.results, seen.zones, holders(published)),
        published,
        seen.kafka.unknown_lags,
    )
    staying = [p for p in pods if not (p.is_leaving or p.deleting or p.stopped)]
    decision = decide_planning(
        PlanningInput(
            memory=memory.plan,
            spec_generation=seen.spec_generation,
            clients=clients,
            published=published,
            reported=[pod for pod, r in seen.results.items() if isinstance(r, PodMetrics)],
            staying=[p.name for p in staying],
            starting=[
                p.name
                for p in staying
                if p.created is not None and (seen.now - p.created).total_seconds() < config.startup_grace
            ],
            acceptable_recovery_lag=spec.assignment.acceptable_recovery_lag,
            catch_up_trigger=spec.assignment.catch_up_trigger,
            now=seen.now,
            waited=(seen.now - memory.started_at).total_seconds(),
            startup_grace=config.startup_grace,
            tasks=frozenset(task_ids(spec)),
            racks_changed=dict(seen.kafka.racks) != dict(memory.planned_racks),
            waiting_for_kafka=seen.kafka.first_read_pending,
            probing=config.probing,
            catch_up=_catches_up(config, memory.plan, seen.now),
        )
    )
    if not decision.plan:
        return decision, None, memory
    snapshot = planner_snapshot(spec, seen.now, clients, published, memory, seen.kafka)
    plan = planner(snapshot)
    memory = replace(
        memory,
        plan=PlanMemory(
            seen.spec_generation, fingerprint(clients), seen.now, plan, frozenset(task_ids(spec))
        ),
        planned_racks=seen.kafka.racks,
    )
    return decision, PlanRecord(str(decision.due), plan, len(clients), len(snapshot.tasks)), memory


def _catches_up(config: RoundConfig, plan: PlanMemory | None, now: datetime) -> bool:
    """Whether a copy the last plan waits for plans again once it has caught up (`catch_up_after`)."""
    after = config.catch_up_after
    return plan is None or (after is not None and (now - plan.planned_at).total_seconds() >= after)


def _wait(
    waits: HandOverWait, seen: Observation, spec: StreamsAppSpec, pods: Sequence[PodInfo]
) -> HandOverWait:
    """The hand-over's view after this round: the live pods and the generations they acknowledged."""
    return replace(
        waits,
        alive=frozenset(p.name for p in pods if p.alive),
        urls=seen.urls,
        acked={
            pod: r.generation
            for pod, r in seen.results.items()
            if isinstance(r, PodMetrics) and r.generation is not None
        },
        status_generation=seen.status_generation,
        kafka_rebalances=spec.runtime is Runtime.KAFKA_STREAMS,
        max_warmups=spec.assignment.max_warmup_replicas,
        # a hand-over found in the ConfigMap (a restart): polls start now
        published_at=waits.published_at or seen.now,
    )


def _status(
    memory: RoundMemory,
    seen: Observation,
    spec: StreamsAppSpec | None,
    pods: Sequence[PodInfo],
    published: Publication,
    held_for: Sequence[str],
    failures: Mapping[str, ScrapeFailure],
    progress: Progress | None,
) -> StreamsAppStatus:
    lag_total, lag_max = active_lag(published, seen.results)
    known = with_reported_topology(spec, memory.app_report.topology, seen.app) if spec is not None else None
    tasks = len(task_ids(known)) if known is not None else 0
    fallback, topology, topology_mismatch = report_problems(memory.app_report, seen.now)
    return build_status(
        StatusInput(
            app=seen.app,
            observed_generation=seen.spec_generation,
            replicas=spec.replicas if spec is not None else 0,
            tasks=tasks,
            pods=pods,
            published=published,
            plan=_plan_outcome(memory.plan),
            settled=settled(memory.plan, published),
            leaving=leaving_pods(
                # not planner_config(spec): building a whole planner config every round cost a tenth of a step
                pods,
                scale_down_timeout_seconds(spec.scaling) if spec is not None else None,
            ),
            lag_total=lag_total,
            lag_max_task=lag_max,
            recommended_replicas=recommended_replicas(
                memory.rates.means(),
                published,
                lag_total,
                tasks,
                results=seen.results,
                busy_ratio=spec.autoscaling.target.busy_ratio if spec is not None else 0.8,
            ),
            degraded=degraded(held_for=held_for, unreadable=seen.unreadable, failures=failures),
            invalid_spec=Problem("SpecInvalid", "; ".join(seen.problems)) if seen.problems else None,
            kafka=_kafka_outcome(spec, seen.kafka),
            fallback=fallback,
            topology=topology,
            topology_mismatch=topology_mismatch,
            streams_assignor=streamsassignor.check(spec, seen.kafka.streams_assignors),
            previous=seen.previous_status,
            now=seen.now,
            progress=progress,
        )
    )


def _kafka_outcome(spec: StreamsAppSpec | None, kafka: KafkaView) -> KafkaOutcome | None:
    if spec is None or spec.kafka is None:
        return None
    return KafkaOutcome(kafka.problem, kafka.read_once, kafka.status)


def _plan_outcome(memory: PlanMemory | None) -> PlanOutcome | None:
    if memory is None:
        return None
    followup = memory.plan.followup
    return PlanOutcome(
        stable=memory.plan.stable,
        stats=memory.plan.stats,
        next_probe=memory.next_probe,
        probe_reason=followup.reason if followup is not None else None,
        rack_unknown=memory.plan.rack_unknown,
    )


_MEMORY_FIELDS = attrgetter(*(f.name for f in fields(RoundMemory) if f.name != "quiet"))
_OBSERVED_FIELDS = attrgetter(*(f.name for f in fields(Observation) if f.name != "now"))
