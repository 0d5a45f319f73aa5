"""The app's status (Contract 2) from what one reconciliation saw and did, as a pure function.

Conditions follow metav1.Condition: `lastTransitionTime` changes only when a condition's status changes,
reasons are CamelCase for machines, messages are for people, and every condition carries the
`observedGeneration` of the spec it was computed from. `phase` is a one-word summary of the conditions.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from smoothscale.assignor.models import PlanStats, RackUnknown
from smoothscale.contract.publication import Publication

from ..resource import (
    AssignmentStatus,
    AutoscalingStatus,
    Condition,
    ConditionStatus,
    ConditionType,
    KafkaStatus,
    LagStatus,
    LearnedSubtopologyStatus,
    LeavingPod,
    MigrationProgress,
    Phase,
    ProbingStatus,
    StreamsAppStatus,
    WarmupProgress,
)
from . import object_names
from .events import rack_unknown_message
from .observed import LearnedSubtopology, PodMetrics, ScrapeFailure, ScrapeResult
from .pods import PodInfo, leaving_since
from .progress import Progress


@dataclass(frozen=True)
class Problem:
    """Why a condition is True: a CamelCase reason and a message."""

    reason: str
    message: str


def degraded(
    *,
    held_for: Sequence[str] = (),
    unreadable: str | None = None,
    failures: Mapping[str, ScrapeFailure] | None = None,
) -> Problem | None:
    """The `Degraded` condition's problem, the most consequential first: planning held for pods that hold
    tasks and report no metrics (their tasks stay put), an assignment ConfigMap that cannot be read (nothing
    is published), then pods whose metrics failed (`failures`: those that matter, see the reconciler). Each
    failed pod is named with its failure, the URL tried among it: a wrong port or path shows at once."""
    failures = failures or {}

    def named(pod: str) -> str:
        failure = failures.get(pod)
        return pod if failure is None else f"{pod} ({failure.reason}: {failure.message})"

    if held_for:
        return Problem(
            "MetricsUnavailable",
            f"planning held: no metrics from {', '.join(map(named, held_for))}, which hold tasks; "
            "their tasks stay where they are until the pods report again or are gone",
        )
    if unreadable is not None:
        return Problem("AssignmentUnreadable", f"the assignment ConfigMap cannot be read: {unreadable}")
    if failures:
        return Problem("MetricsUnavailable", f"no metrics from {', '.join(map(named, sorted(failures)))}")
    return None


@dataclass(frozen=True)
class PlanOutcome:
    """The last plan, as far as status needs it."""

    stable: bool
    stats: PlanStats
    next_probe: datetime | None
    probe_reason: str | None
    rack_unknown: RackUnknown = field(default_factory=RackUnknown)
    """What the plan could not be rack-aware about: pods of unknown zone, inputs of unknown racks."""


@dataclass(frozen=True)
class KafkaOutcome:
    """Reading Kafka (`spec.kafka` set): the failure of the last read, if any, and what was last read."""

    problem: Problem | None
    read_once: bool
    status: KafkaStatus | None


@dataclass(frozen=True)
class StreamsAssignorCheck:
    """For an app on the streams protocol (`streamsassignor.check`): whether its brokers' assignors were
    read (`checked`), and what is missing."""

    checked: bool
    problem: Problem | None = None


@dataclass(frozen=True)
class Leaving:
    pod: str
    since: datetime
    deadline: datetime | None


@dataclass(frozen=True)
class StatusInput:
    app: str
    observed_generation: int
    replicas: int
    tasks: int
    pods: Sequence[PodInfo]
    published: Publication
    plan: PlanOutcome | None
    settled: bool
    """The published generation is the last plan's assignment, with no hand-over in flight."""
    leaving: Sequence[Leaving]
    lag_total: int
    lag_max_task: int
    degraded: Problem | None
    invalid_spec: Problem | None
    previous: StreamsAppStatus | None
    now: datetime
    recommended_replicas: int | None = None
    """`autoscale.recommended_replicas`: None while no processing rate has been measured."""
    kafka: KafkaOutcome | None = None
    """None without `spec.kafka`: no KafkaUnavailable condition, no `status.kafka`."""
    fallback: Problem | None = None
    """`assignorfallbacks.fallback_problem`: a recent rebalance did not follow the plan as published."""
    topology: Sequence[LearnedSubtopology] | None = None
    """The topology the app reports (Kafka Streams apps); None: it reports none (yet)."""
    topology_mismatch: Problem | None = None
    """How `spec.topology` differs from the reported topology (`learnedtopology.topology_differences`)."""
    streams_assignor: StreamsAssignorCheck | None = None
    """None: the app runs the classic protocol (no StreamsAssignorMissing condition)."""
    progress: Progress | None = None
    """The migration in progress (`progress.RestoreMeter.estimate`); None while no task moves."""


def build_status(given: StatusInput) -> StreamsAppStatus:
    present = [p for p in given.pods if not p.deleting]
    ready = [p for p in present if p.ready]
    conditions = [
        _ready(given, ready),
        _stable(given),
        _migrating(given),
        _scaling_down(given),
        _problem(ConditionType.DEGRADED, given.degraded, "AllPodsReporting", "every pod reports its metrics"),
        _problem(ConditionType.INVALID_SPEC, given.invalid_spec, "SpecValid", "the spec can be acted on"),
        *_kafka(given.kafka),
        *_streams_assignor(given.streams_assignor),
        _rack_awareness(given),
        *_reported(given),
    ]
    stamped = [_stamp(c, given) for c in conditions]
    published = given.published
    stats = given.plan.stats if given.plan is not None else None
    return StreamsAppStatus(
        observed_generation=given.observed_generation,
        replicas=len(present),
        ready_replicas=len(ready),
        selector=object_names.selector(given.app),
        phase=_phase(stamped),
        conditions=stamped,
        assignment=AssignmentStatus(
            generation=published.generation,
            config_map=object_names.assignment_configmap(given.app),
            active_tasks=sum(len(a.active) for a in published.assignment.values()),
            standby_tasks=sum(len(a.standby) for a in published.assignment.values()),
            warmup_tasks=sum(len(a.warmup) for a in published.assignment.values()),
            cross_rack_cost=stats.cross_rack_cost if stats is not None else 0,
            active_imbalance=max(0.0, stats.active_imbalance) if stats is not None else 0.0,
        ),
        probing=_probing(given.plan),
        leaving=[LeavingPod(pod=x.pod, since=x.since, deadline=x.deadline) for x in given.leaving],
        lag=LagStatus(total=given.lag_total, max_task=given.lag_max_task),
        autoscaling=AutoscalingStatus(
            migrating=_is_migrating(given), recommended_replicas=given.recommended_replicas
        ),
        kafka=given.kafka.status if given.kafka is not None else None,
        topology=[
            LearnedSubtopologyStatus(
                name=sub.name,
                partitions=sub.partitions,
                stateful=sub.stateful,
                input_topics=list(sub.input_topics),
                changelog_topics=list(sub.changelog_topics),
            )
            for sub in given.topology or ()
        ],
        progress=_progress(given.progress),
    )


_Draft = tuple[ConditionType, ConditionStatus, str, str]


def _ready(given: StatusInput, ready: Sequence[PodInfo]) -> _Draft:
    ready_staying = sum(1 for p in ready if not p.is_leaving)
    running = sum(len(a.active) for a in given.published.assignment.values())
    if ready_staying < given.replicas:
        message = f"{ready_staying} of {given.replicas} pods ready"
        return ConditionType.READY, ConditionStatus.FALSE, "PodsNotReady", message
    if running < given.tasks:
        message = f"{given.tasks - running} of {given.tasks} tasks have no active pod"
        return ConditionType.READY, ConditionStatus.FALSE, "TasksUnassigned", message
    message = f"{given.tasks} tasks active on {ready_staying} ready pods"
    return ConditionType.READY, ConditionStatus.TRUE, "AllTasksRunning", message


def _stable(given: StatusInput) -> _Draft:
    plan = given.plan
    if plan is None:
        return ConditionType.STABLE, ConditionStatus.UNKNOWN, "NotPlanned", "no plan has been made yet"
    if given.published.revoking:
        message = f"{len(given.published.revoking)} hand-over(s) waiting for the old owner"
        return ConditionType.STABLE, ConditionStatus.FALSE, "HandOverInProgress", message
    if not plan.stable:
        message = plan.probe_reason or "the assignment has not converged"
        return ConditionType.STABLE, ConditionStatus.FALSE, "Probing", message
    if not given.settled:
        return ConditionType.STABLE, ConditionStatus.FALSE, "Publishing", "the plan is not fully published"
    return ConditionType.STABLE, ConditionStatus.TRUE, "Converged", "the assignment is balanced and stable"


def _warmups(given: StatusInput) -> int:
    return sum(len(a.warmup) for a in given.published.assignment.values())


def _is_migrating(given: StatusInput) -> bool:
    return bool(_warmups(given) or given.published.revoking)


def _migrating(given: StatusInput) -> _Draft:
    warmups = _warmups(given)
    revoking = len(given.published.revoking)
    if revoking:
        message = f"{revoking} task(s) revoked, waiting for their old owner to stop them"
        return ConditionType.MIGRATING, ConditionStatus.TRUE, "HandOverInProgress", message
    if warmups:
        message = f"{warmups} warmup(s) restoring state before tasks move"
        return ConditionType.MIGRATING, ConditionStatus.TRUE, "WarmupsRestoring", message
    return ConditionType.MIGRATING, ConditionStatus.FALSE, "NoTasksMoving", "no task is moving"


def _scaling_down(given: StatusInput) -> _Draft:
    if not given.leaving:
        return ConditionType.SCALING_DOWN, ConditionStatus.FALSE, "NoPodsLeaving", "no pod is leaving"
    pods = ", ".join(x.pod for x in given.leaving)
    message = f"{len(given.leaving)} pod(s) leaving once their tasks have moved: {pods}"
    return ConditionType.SCALING_DOWN, ConditionStatus.TRUE, "PodsLeaving", message


def _rack_awareness(given: StatusInput) -> _Draft:
    kind = ConditionType.RACK_AWARENESS_DEGRADED
    unknown = given.plan.rack_unknown if given.plan is not None else RackUnknown()
    if not unknown.pods and not unknown.tasks:
        return kind, ConditionStatus.FALSE, "RackDataComplete", "every pod's zone and input's racks are known"
    return kind, ConditionStatus.TRUE, "RackDataMissing", rack_unknown_message(unknown)


def _reported(given: StatusInput) -> list[_Draft]:
    """AssignorFallback and TopologyMismatch: only for apps whose pods report a topology (the bridge's)."""
    if given.topology is None:
        return []
    return [
        _problem(
            ConditionType.ASSIGNOR_FALLBACK, given.fallback, "FollowingPlan", "rebalances follow the plan"
        ),
        _problem(
            ConditionType.TOPOLOGY_MISMATCH,
            given.topology_mismatch,
            "TopologyMatches",
            "spec.topology, if given, is the topology the app reports",
        ),
    ]


def _problem(kind: ConditionType, problem: Problem | None, ok_reason: str, ok_message: str) -> _Draft:
    if problem is None:
        return kind, ConditionStatus.FALSE, ok_reason, ok_message
    return kind, ConditionStatus.TRUE, problem.reason, problem.message


def _kafka(outcome: KafkaOutcome | None) -> list[_Draft]:
    """KafkaUnavailable, only for apps with `spec.kafka`: planning goes on either way (with what was read
    last), so the condition informs and does not change the phase."""
    if outcome is None:
        return []
    if outcome.problem is None and not outcome.read_once:
        message = "Kafka has not been read yet"
        return [(ConditionType.KAFKA_UNAVAILABLE, ConditionStatus.UNKNOWN, "KafkaNotReadYet", message)]
    return [_problem(ConditionType.KAFKA_UNAVAILABLE, outcome.problem, "KafkaAvailable", "Kafka answers")]


def _streams_assignor(check: StreamsAssignorCheck | None) -> list[_Draft]:
    """StreamsAssignorMissing, only for apps on `group.protocol=streams` (`spec.kafka.groupProtocol`)."""
    if check is None:
        return []
    kind = ConditionType.STREAMS_ASSIGNOR_MISSING
    if not check.checked:
        message = "the brokers' group.streams.assignors are not read yet"
        return [(kind, ConditionStatus.UNKNOWN, "BrokersNotReadYet", message)]
    ok = "every broker loads smoothscale's assignor"
    return [_problem(kind, check.problem, "PluginLoaded", ok)]


def _stamp(draft: _Draft, given: StatusInput) -> Condition:
    return stamped(draft, given.previous, given.observed_generation, given.now)


def stamped(
    draft: tuple[ConditionType, ConditionStatus, str, str],
    previous: StreamsAppStatus | None,
    generation: int,
    now: datetime,
) -> Condition:
    """A condition (type, status, reason, message) as status shows it: its last transition is the previous
    status's while its status is the same, else now."""
    kind, status, reason, message = draft
    before = previous.condition(kind) if previous is not None else None
    since = before.last_transition_time if before is not None and before.status == status else now
    return Condition(
        type=kind,
        status=status,
        observed_generation=generation,
        last_transition_time=since,
        reason=reason,
        message=message,
    )


def _phase(conditions: Sequence[Condition]) -> Phase:
    true = {c.type for c in conditions if c.status == ConditionStatus.TRUE}
    for kind, phase in (
        (ConditionType.INVALID_SPEC, Phase.INVALID),
        (ConditionType.DEGRADED, Phase.DEGRADED),
        (ConditionType.SCALING_DOWN, Phase.SCALING_DOWN),
        (ConditionType.MIGRATING, Phase.MIGRATING),
        (ConditionType.READY, Phase.RUNNING),
    ):
        if kind in true:
            return phase
    return Phase.PENDING


def _probing(plan: PlanOutcome | None) -> ProbingStatus | None:
    if plan is None or plan.stable or plan.next_probe is None:
        return None
    return ProbingStatus(next_probe_time=plan.next_probe, reason=plan.probe_reason)


def _progress(progress: Progress | None) -> MigrationProgress | None:
    if progress is None:
        return None
    return MigrationProgress(
        start_time=progress.started,
        percent=progress.percent,
        copies_warming=len(progress.warming),
        tasks_queued=progress.queued,
        actives_restoring=progress.restoring,
        handovers_pending=progress.revoking,
        records_restored=progress.records_restored,
        records_left=progress.records_left,
        estimated_completion_time=_second(progress.eta),
        first_estimated_completion_time=_second(progress.first_eta),
        warmups=[
            WarmupProgress(
                task=copy.task,
                pod=copy.pod,
                records_left=copy.records_left,
                restore_rate=None if copy.rate is None else round(copy.rate, 1),
                estimated_completion_time=_second(copy.eta),
            )
            for copy in progress.warming
        ],
    )


def _second(moment: datetime | None) -> datetime | None:
    """To the nearest whole second, as status writes it (a status that changed only below a second is not
    written again)."""
    if moment is None:
        return None
    return (moment + timedelta(microseconds=500_000)).replace(microsecond=0)


def active_lag(published: Publication, results: Mapping[str, ScrapeResult]) -> tuple[int, int]:
    """The sum and the largest of the active tasks' lags, as their owners report them."""
    lags: list[int] = []
    for pod, roles in published.assignment.items():
        result = results.get(pod)
        if isinstance(result, PodMetrics):
            lags.extend(result.lags.get(task, 0) for task in roles.active)
    return sum(lags), max(lags, default=0)


def leaving_pods(pods: Sequence[PodInfo], timeout: float | None) -> list[Leaving]:
    """status.leaving: every leaving pod not yet being deleted, with its deadline if there is a timeout."""
    out = []
    for pod in pods:
        since = leaving_since(pod) if pod.is_leaving else None
        if since is None or pod.deleting:
            continue
        deadline = since + timedelta(seconds=timeout) if timeout is not None else None
        out.append(Leaving(pod.name, since, deadline))
    return out
