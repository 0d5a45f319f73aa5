"""One round of one app, decided in one place: `step(memory, observation, config)` returns everything to do
and the next memory.

The reconciler observes (the spec, the pods listed from the API server, the nodes' zones, every pod's
metrics, Kafka's facts, the publication in force, the clock), calls `step`, carries the decisions out (pod
actions, the next generation) and reports them (Events, journal, metrics, status). `smoothscale explain`
and the simulator are adapters that call the same `step` (explain on a fresh memory, the simulator every
simulated round, with `poll` between rounds). Planning is an effect: a step that wants a plan returns only
the request (`Decisions.plan_wanted`); the adapter plans (the operator in a thread, planning being CPU work;
the simulator, explain and tests inline, `step_planning_inline`) and its next observation carries the plan
(`Observation.plan`). `RoundConfig` holds the operator's settings and what the simulator's baselines switch
off (the catch-up trigger, the probe, what a generation aims at); the operator runs with its defaults.

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
from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta
from typing import Any

from smoothscale.assignor.models import Plan, Snapshot, caught_up
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
from .autoscale import ScaleDownHold, recommended_replicas, staying_current
from .failover import Failover, Leases, without_expired
from .handover import HandOverWait, barrier_pending
from .learnedtopology import with_reported_topology
from .observed import PodMetrics, ScrapeFailure, ScrapeResult
from .planning import PlanningDecision, PlanningInput, decide_planning
from .pods import PodInfo
from .probing import Fingerprint, PlanMemory, fingerprint, holders, settled
from .progress import Progress, RestoreMeter, Work, remaining_work
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


@dataclass(frozen=True)
class PlanRequest:
    """A plan the step wants (`Decisions.plan_wanted`): the planner's input, and what the plan's memory
    keeps of the round that asked. The adapter plans (the operator in a thread: planning is CPU work) and
    hands the plan back in its next observation (`Observation.plan`)."""

    snapshot: Snapshot
    trigger: str
    spec_generation: int
    fingerprint: Fingerprint
    tasks: frozenset[str]
    racks: Mapping[str, list[list[str]]]
    clients: int


@dataclass(frozen=True)
class PlanAnswer:
    """The plan of a `PlanRequest`, and how long the planner took (reported with it)."""

    request: PlanRequest
    plan: Plan
    seconds: float = 0.0


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
    """The spec's template revision (`resource.template_revision`)."""
    kafka: KafkaView = field(default_factory=KafkaView)
    urls: Mapping[str, str] = field(default_factory=dict)
    """Where each running pod was scraped: the hand-over's polls between rounds ask the same addresses."""
    renewals: Mapping[str, str] | None = None
    """Each listed pod's lease renewal token, a pod that renews not left out (`failover`); None: no lease
    is read, and no pod is failed over."""
    leased: frozenset[str] | None = None
    """The listed pods that hold a lease at all (the operator's: those created with the app's lease setting),
    the only ones timed; None: every listed pod (the simulator's). A pod created before the app had a lease
    renews none and fences nothing: it must never be failed over on a lease."""
    plan: PlanAnswer | None = None
    """The plan the last step asked for (`Decisions.plan_wanted`), once made."""


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


STARTUP_GRACE_SECONDS = 30.0
"""The operator's default start-up grace (`OperatorConfig.startup_grace`)."""
SCRAPE_INTERVAL_SECONDS = 5.0
"""The operator's default scrape (and round) interval (`OperatorConfig.scrape_interval`)."""


def operator_round_config(
    startup_grace: float = STARTUP_GRACE_SECONDS, scrape_interval: float = SCRAPE_INTERVAL_SECONDS
) -> RoundConfig:
    """The configuration the operator decides with, from its settings (its defaults unless given): the one
    place that maps them, so that `explain` decides as the operator does."""
    return RoundConfig(startup_grace=startup_grace, round_interval=scrape_interval)


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
    leases: Leases = field(default_factory=Leases)
    """The pods' lease renewals as seen (`failover`), and whose leases have expired."""
    requested: PlanRequest | None = None
    """The plan the last step asked for: only its answer is taken (`Observation.plan`)."""
    held_for: tuple[str, ...] = ()
    """The pods planning was last held for (journaled when it changes)."""
    assigned_in: Mapping[str, int] = field(default_factory=dict)
    """The generation in which each pod's assignment last changed, as far as the generations this memory
    decided tell (`_assigned_in`): a pod that has applied it runs what it is to run, whatever came after."""

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
    seconds: float
    """How long the planner took."""


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
    at_rest: bool = False
    """Nothing in motion and nothing decided (`_at_rest`): the pods may be read at the steady cadence."""
    read_often: frozenset[str] | None = None
    """The pods whose next reads the decisions wait on (`_read_often`), read every round while the others
    are read at the steady cadence (`scrapecadence`); None: every pod every round. Empty when at rest."""
    planning: PlanningDecision = field(default_factory=PlanningDecision)
    """Whether a plan was due, and what holds or delays it (`explain` says it)."""
    plan_wanted: PlanRequest | None = None
    """A plan is wanted: the round ends there, with no other decision. The adapter plans and observes again,
    the plan in the observation (`Observation.plan`); that step decides the round."""


@dataclass(frozen=True)
class PollDecisions:
    """What one hand-over poll between rounds decided."""

    memory: RoundMemory
    acknowledged: frozenset[str]
    """The awaited pods that have now acknowledged their revocation."""
    publish: Publication | None


@dataclass(frozen=True)
class Stepped:
    """A step as an adapter keeps it until the next one: what it observed, what it decided, and when a
    time-based rule among its decisions may decide otherwise (`wake_at`, None: none)."""

    seen: Observation
    decisions: Decisions
    wake_at: datetime | None

    def repeats(self, seen: Observation) -> bool:
        """Whether a step of `seen`, on the memory this step left (nothing replaced it since: no poll, no
        publication), would decide nothing new: this step acted on no pod (pod actions change what the next
        round lists), no rule's moment has come, and nothing observed has changed (the time aside). The
        adapter may then skip it: the step is pure, and every rule that reads the clock reports its moment
        in `wake_at`."""
        pod_set = self.decisions.pod_set
        return (
            (pod_set is None or pod_set.empty)
            and (self.wake_at is None or seen.now < self.wake_at)
            and replace(seen, now=self.seen.now, plan=self.seen.plan) == self.seen
        )

    def read_often(self, spec: StreamsAppSpec | None, pods: Sequence[PodInfo]) -> frozenset[str] | None:
        """The pods the round about to observe `spec` and `pods` reads every round (`scrapecadence`): the
        ones this step's decisions wait on (`Decisions.read_often`: none when it found the app at rest),
        and the pods that have come or changed since. A pod gone or no longer staying (unready, leaving,
        deleted, stopped), or another spec, reads every pod (None): its tasks go to copies elsewhere, whose
        lags must be the latest. A scale-out's pods coming up one event after another (created, scheduled,
        ready) then read only themselves and what the migration waits on."""
        often = self.decisions.read_often
        if self.seen.spec != spec or often is None:
            return None
        if self.seen.pods == pods:
            return often
        before = {pod.name: pod for pod in self.seen.pods}
        now = {pod.name for pod in pods}
        if any(name not in now for name in before) or any(
            pod.name in before and _ready_and_staying(before[pod.name]) and not _ready_and_staying(pod)
            for pod in pods
        ):
            return None
        return often | {pod.name for pod in pods if before.get(pod.name) != pod}


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
) -> tuple[PodSetPlan, ScaleDownHold, datetime | None]:
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
    return decided, hold, _earliest(decided.recheck_at, hold.ends(policy.stabilization))


def step(
    memory: RoundMemory, seen: Observation, config: RoundConfig
) -> tuple[Decisions, RoundMemory, datetime | None]:
    """One round: the decisions, the memory after it, and when to look again at the latest (`wake_at`):
    the first moment at which a time-based rule may decide otherwise on the same observation (None: no
    rule waits on the clock). A step that asks for a plan, or that measures a migration over time, wants
    the next round whatever it observes (`wake_at` is now)."""
    decisions, after, moments = _decide(memory, seen, config)
    if decisions.plan_wanted is not None or decisions.progress is not None:
        return decisions, after, seen.now
    later = [moment for moment in moments if moment is not None and moment > seen.now]
    return decisions, after, min(later) if later else None


def step_planning_inline(
    memory: RoundMemory, seen: Observation, config: RoundConfig, planner: Callable[[Snapshot], Plan]
) -> tuple[Decisions, RoundMemory, datetime | None]:
    """A step for adapters that plan inline (the simulator, `explain`, tests): when the step asks for a
    plan, `planner` makes it and the next observation is this one with the plan in it (nothing was carried
    out in between). The reconciler does the same with the planner in a thread."""
    decisions, memory, wake_at = step(memory, seen, config)
    wanted = decisions.plan_wanted
    if wanted is None:
        return decisions, memory, wake_at
    return step(memory, replace(seen, plan=PlanAnswer(wanted, planner(wanted.snapshot))), config)


@dataclass
class _Said:
    """What one step has to say so far: its Events, journal records and the moments of its time-based rules
    (local to one step, which fills it in order)."""

    events: list[ev.AppEvent] = field(default_factory=list)
    journal: list[tuple[str, Mapping[str, Any]]] = field(default_factory=list)
    wake: list[datetime | None] = field(default_factory=list)


def _decide(
    memory: RoundMemory, seen: Observation, config: RoundConfig
) -> tuple[Decisions, RoundMemory, list[datetime | None]]:
    """One round, decided, with the moments at which a time-based rule among its decisions may decide
    otherwise; or, when it wants a plan, only that (on the memory it was given)."""
    said = _Said()
    published = seen.published if seen.published is not None else EMPTY
    after, lost, failures = _observed(memory, seen, published, config, said)
    working = working_spec(after, seen.spec)
    pods: Sequence[PodInfo] = seen.pods
    pod_set, planned, decision = None, None, PlanningDecision()
    if seen.published is not None and seen.spec is not None:
        after, pods, pod_set, decision, planned, wanted = _pods_and_plan(
            after, seen, seen.spec, published, config, said
        )
        if wanted is not None:
            return Decisions(plan_wanted=wanted), replace(memory, requested=wanted), []
    if decision.held_for != after.held_for:
        if decision.held_for:
            said.journal.append(("plan-held", {"reason": str(decision.due), "pods": list(decision.held_for)}))
        after = replace(after, held_for=decision.held_for)
    publish = None
    if seen.published is not None and working is not None:
        after = replace(after, waits=_wait(after.waits, seen, working, without_expired(pods, after.leases)))
        publish = after.waits.next(published, _aimed(config, after, published))
        after = _assigned_in(after, published, publish)
    after, progress, work = _progress(after, seen, working, pods, publish or published, config)
    status = (
        _status(after, seen, working, pods, publish or published, decision.held_for, failures, progress)
        if config.status
        else None
    )
    decisions = Decisions(
        events=tuple(said.events),
        journal=tuple(said.journal),
        lost=tuple(sorted(lost)),
        failures=failures,
        pod_set=pod_set,
        pods=pods,
        planned=planned,
        publish=publish,
        status=status,
        scraped_lag=active_lag(published, seen.results)[0],
        progress=progress,
        planning=decision,
    )
    at_rest = _at_rest(after, seen, decisions)
    read_often = frozenset() if at_rest else _read_often(after, seen, pods, publish or published, work)
    return replace(decisions, at_rest=at_rest, read_often=read_often), after, said.wake


def _observed(
    memory: RoundMemory, seen: Observation, published: Publication, config: RoundConfig, said: _Said
) -> tuple[RoundMemory, set[str], dict[str, ScrapeFailure]]:
    """Steps 1 and 2: the spec and the pods lost, the brokers' assignors, the scrape failures that count,
    changelog ends and rates, the bridge's reports, the leases; the memory after them."""
    spec = seen.spec
    if spec is not None:
        memory = replace(memory, last_good=spec)
    if seen.problems != memory.problems:
        said.events += ev.spec_events(memory.problems, seen.problems)
        said.journal.append(("spec", {"valid": seen.problems is None, "problems": list(seen.problems or [])}))
        memory = replace(memory, problems=seen.problems)
    memory, lost = _lost(memory, seen.pods)
    said.events += ev.lost_pod_events(lost)
    working = working_spec(memory, spec)
    assignor_check = streamsassignor.check(working, seen.kafka.streams_assignors)
    said.events += streamsassignor.events(memory.streams_assignor, assignor_check)
    memory = replace(
        memory, streams_assignor=streamsassignor.remembered(memory.streams_assignor, assignor_check)
    )
    failures = _failures(seen, published)
    said.events += ev.scrape_events(memory.failing, failures, seen.results)
    memory = observe_scrape(replace(memory, failing=frozenset(failures)), seen, published)
    app_report, reported = observe_app_report(memory.app_report, seen.results, working, seen.now)
    said.events += reported
    memory = replace(memory, app_report=app_report)
    said.wake.append(app_report.fallbacks.expires)
    if config.failover is not None and seen.renewals is not None:
        timed = [p.name for p in seen.pods if seen.leased is None or p.name in seen.leased]
        leases = memory.leases.observe(seen.renewals, timed, seen.now, config.failover)
        said.events += failover.events(memory.leases, leases)
        said.journal += failover.journal(memory.leases, leases)
        memory = replace(memory, leases=leases)
        said.wake.append(leases.next_expiry(seen.now, config.failover))
    return memory, lost, failures


def _pods_and_plan(
    memory: RoundMemory,
    seen: Observation,
    spec: StreamsAppSpec,
    published: Publication,
    config: RoundConfig,
    said: _Said,
) -> tuple[
    RoundMemory, Sequence[PodInfo], PodSetPlan, PlanningDecision, PlanRecord | None, PlanRequest | None
]:
    """Steps 3 and 4: the pod set, and planning on the pods as it leaves them."""
    pod_set, hold, pod_set_wake = _pod_set(spec, seen, published, memory)
    memory = replace(memory, hold=hold)
    said.wake.append(pod_set_wake)
    if not pod_set.empty:
        said.events += ev.pod_set_events(pod_set, seen.app)
        memory = replace(memory, deleted_by_us=memory.deleted_by_us | _deletions(pod_set))
    pods = as_planned(seen.pods, pod_set, seen.now)
    planning = with_reported_topology(spec, memory.app_report.topology, seen.app)  # None: no tasks known yet
    if planning is None:
        return memory, pods, pod_set, PlanningDecision(), None, None
    before = memory.plan
    kept = without_expired(pods, memory.leases)
    decision, planned, wanted, memory = _plan(memory, seen, planning, kept, published, config)
    said.wake.append(decision.recheck_at)
    if planned is not None:
        said.events += ev.rack_events(
            None if before is None else before.plan.rack_unknown, planned.plan.rack_unknown
        )
    return memory, pods, pod_set, decision, planned, wanted


def _at_rest(memory: RoundMemory, seen: Observation, decisions: Decisions) -> bool:
    """The app is at rest after this round: it decided nothing (no Event, journal record, pod action, plan
    or generation), its last plan is stable and published as planned, no hand-over waits, no scale-down is
    held, every pod is ready and staying, and nothing it reads is failing (Kafka, its ConfigMap): a problem
    is read again every round, so that its fix is seen at once."""
    published = seen.published
    return (
        seen.spec is not None
        and published is not None
        and seen.kafka.problem is None
        and not seen.kafka.first_read_pending
        and not seen.kafka.unknown_lags
        and settled(memory.plan, published)
        and not (decisions.events or decisions.journal or decisions.lost or decisions.failures)
        and (decisions.pod_set is None or decisions.pod_set.empty)
        and decisions.planned is None
        and decisions.publish is None
        and not memory.waits.awaited(published)
        and memory.hold.since is None
        and all(_ready_and_staying(p) for p in seen.pods)
    )


def _ready_and_staying(pod: PodInfo) -> bool:
    """Ready, and neither leaving, being deleted nor stopped."""
    return pod.ready and not (pod.is_leaving or pod.deleting or pod.stopped)


def _read_often(
    memory: RoundMemory,
    seen: Observation,
    pods: Sequence[PodInfo],
    published: Publication,
    work: Work | None,
) -> frozenset[str] | None:
    """The pods of a moving app whose next reads a decision waits on: a copy restoring on them or queued
    for them (the move follows its lag; a standby last reported behind counts, the planner weighs it), a
    generation that changed their assignment and that they have not reported applying (what follows waits
    on it), a revocation to acknowledge, a barrier, or a pod starting, unready or leaving. The other pods
    of a migration hold what they held and report what they reported: reading them at the steady cadence
    is what keeps the CPU of ten apps scaling out at once low (`operator_bench`). None (every pod) while
    there is no working spec."""
    if work is None:
        return None
    acked = _acked(seen)
    if barrier_pending(published, acked, [p.name for p in pods if p.alive]):
        return None  # every live pod is to apply the barrier before anything starts
    behind = {
        pod
        for pod, result in seen.results.items()
        if isinstance(result, PodMetrics)
        and any(not caught_up(lag, work.caught_up) for lag in result.lags.values())
    }
    return (
        work.pods
        | behind
        | memory.waits.awaited(published)
        | {revocation.owner for revocation in published.revoking.values()}
        | {
            p.name
            for p in pods
            if not _ready_and_staying(p)
            or acked.get(p.name, -1) < memory.assigned_in.get(p.name, published.generation)
        }
    )


def _progress(
    memory: RoundMemory,
    seen: Observation,
    spec: StreamsAppSpec | None,
    pods: Sequence[PodInfo],
    published: Publication,
    config: RoundConfig,
) -> tuple[RoundMemory, Progress | None, Work | None]:
    """The migration's progress after this round, the memory with this round's restore rates, and the work
    left (None without a spec)."""
    if spec is None:
        return memory, None, None
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
    return (memory if meter is memory.restore else replace(memory, restore=meter)), progress, work


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
    return PollDecisions(_assigned_in(memory, published, publish), acknowledged, publish)


def _assigned_in(memory: RoundMemory, published: Publication, publish: Publication | None) -> RoundMemory:
    """The memory once `publish` follows `published`: a pod whose assignment it changes has it from
    `publish`'s generation on, one it leaves alone from `published`'s at the latest (a pod not yet
    known)."""
    if publish is None:
        return memory
    before, after = published.assignment, publish.assignment
    assigned_in = {
        pod: publish.generation
        if before.get(pod) != after.get(pod)
        else memory.assigned_in.get(pod, published.generation)
        for pod in set(before) | set(after)
    }
    return replace(memory, assigned_in=assigned_in)


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
) -> tuple[PodSetPlan, ScaleDownHold, datetime | None]:
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


def _earliest(*moments: datetime | None) -> datetime | None:
    known = [moment for moment in moments if moment is not None]
    return min(known) if known else None


def _not_yet_revoked(seen: Observation, published: Publication) -> set[str]:
    """Leaving Kafka Streams pods, alive, that have not reported running the published generation: Kafka
    may still have them run tasks the plan moved away (it is published in one generation and Kafka's
    rebalance revokes them, `handover.plan_as_published`). Retired now, such a pod would stop them before
    the rebalance hands them over, and the group would wait out its session timeout to reassign them
    (Kafka Streams sends no LeaveGroup on close): measured by `smoothscale demo --kafka --app-jar`, 10 to
    15 s without processing for every task a scale-in moved. The scale-down timeout still bounds the wait."""
    acked = _acked(seen)
    return {
        pod.name
        for pod in seen.pods
        if pod.is_leaving and pod.alive and acked.get(pod.name, -1) < published.generation
    }


def _acked(seen: Observation) -> dict[str, int]:
    """The generation each pod read reports applying."""
    return {
        pod: result.generation
        for pod, result in seen.results.items()
        if isinstance(result, PodMetrics) and result.generation is not None
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
) -> tuple[PlanningDecision, PlanRecord | None, PlanRequest | None, RoundMemory]:
    """Planning: the plan the last step asked for taken (when this observation brings it), then whether to
    plan; a plan wanted is asked for (`PlanRequest`), not made here."""
    clients = without_unknown_lags(
        observed_clients(pods, seen.results, seen.zones, holders(published)),
        published,
        seen.kafka.unknown_lags,
    )
    planned = None
    answer = seen.plan
    if answer is not None and answer.request == memory.requested:
        asked = answer.request
        memory = replace(
            memory,
            plan=PlanMemory(
                asked.spec_generation, asked.fingerprint, asked.snapshot.now, answer.plan, asked.tasks
            ),
            planned_racks=asked.racks,
            requested=None,
        )
        planned = PlanRecord(
            asked.trigger, answer.plan, asked.clients, len(asked.snapshot.tasks), answer.seconds
        )
    staying = [p for p in pods if not (p.is_leaving or p.deleting or p.stopped)]
    tasks = frozenset(task_ids(spec))
    grace = timedelta(seconds=config.startup_grace)
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
            tasks=tasks,
            racks_changed=dict(seen.kafka.racks) != dict(memory.planned_racks),
            waiting_for_kafka=seen.kafka.first_read_pending,
            probing=config.probing,
            catch_up=_catches_up(config, memory.plan, seen.now),
            # the moments its clock-driven rules may decide otherwise: a start-up grace ending, the catch-up
            # delay passing (the probe's is the plan's own)
            moments=(
                memory.started_at + grace,
                *(p.created + grace for p in staying if p.created is not None),
                _catch_up_from(config, memory.plan),
            ),
        )
    )
    if not decision.plan or planned is not None:
        return decision, planned, None, memory
    request = PlanRequest(
        snapshot=planner_snapshot(spec, seen.now, clients, published, memory, seen.kafka),
        trigger=str(decision.due),
        spec_generation=seen.spec_generation,
        fingerprint=fingerprint(clients),
        tasks=tasks,
        racks=seen.kafka.racks,
        clients=len(clients),
    )
    return decision, None, request, memory


def _catches_up(config: RoundConfig, plan: PlanMemory | None, now: datetime) -> bool:
    """Whether a copy the last plan waits for plans again once it has caught up (`catch_up_after`)."""
    since = _catch_up_from(config, plan)
    return plan is None or (since is not None and now >= since)


def _catch_up_from(config: RoundConfig, plan: PlanMemory | None) -> datetime | None:
    """From when a copy the last plan waits for plans again once caught up (None: never, or no plan)."""
    after = config.catch_up_after
    return None if plan is None or after is None else plan.planned_at + timedelta(seconds=after)


def _wait(
    waits: HandOverWait, seen: Observation, spec: StreamsAppSpec, pods: Sequence[PodInfo]
) -> HandOverWait:
    """The hand-over's view after this round: the live pods and the generations they acknowledged."""
    return replace(
        waits,
        alive=frozenset(p.name for p in pods if p.alive),
        urls=seen.urls,
        acked=_acked(seen),
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
