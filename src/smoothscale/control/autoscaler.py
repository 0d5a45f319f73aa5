"""The autoscaler that acts (`spec.autoscaling.mode: Act`): how many pods an app needs, decided from what
its pods measure and from the state that a change of size moves. Pure: one call per round, an immutable
memory in, a decision (or none) and the next memory out; the operator and the simulator feed it the same
`LoadSample` and carry its decision out (`spec.replicas`, through the scale subresource).

**True capacity.** A pod's capacity is the records per second it would process if it were busy all the
time: the records it processed divided by the fraction of the time its threads were busy (DS2, OSDI 2018;
Flink's autoscaler does the same with its busy time). Kafka Streams reports the busy fraction as its
thread-level `process-ratio` (the bridge exports it), the client library as
`smoothscale_pod_busy_ratio`. A pod that reports no busy time gives only a lower bound of its capacity
(what it processed): the decision then says so (`capacity_measured` false) and scales out on lag alone.

**Sizing.** `steady(rate)` is the fewest pods that keep every pod at or below the target busy ratio. Tasks
are the unit of placement, so with `T` tasks on `m` pods the busiest pod runs `ceil(T / m)` of them: `m`
pods process at most `capacity * T / ceil(T / m)` records a second, not `capacity * m` (adding a pod that
does not lower the busiest pod's task count adds nothing).

**A scale-out is a migration** (smoothscale's, state-aware): a new pod carries a task only once that
task's state has been restored onto it, at most `maxWarmupReplicas` copies at once, each at the restore
rate the pods were measured to reach, while the old pods keep running the tasks not yet moved. `forecast`
plays that migration warmup batch by warmup batch (`k = T * (m - n) / m` tasks move, each batch takes
`state per task / restore rate`) and returns how long it takes, the backlog it leaves, and the backlog of
the task that moves last (it waits on an overloaded old pod the whole time). The decision takes the
smallest `m >= steady(rate)` that drains both within the lag target once the migration ends: one step,
sized for the lag its own migration accrues, not one step per poll as a lag-threshold autoscaler takes
while the new pods restore (the lag keeps rising until they carry load).

**No new decision while its migration warms up** (the scale-out's forecast duration, and as long as tasks
move): a scale-out's own backlog is expected; only a backlog beyond `BREACH_MARGIN` times the one it
forecast (the load rose again) overrides the hold.

**Scale-downs only with headroom**: to what the peak input rate of the scale-down stabilisation window
needs at the busy target (the spare `1 - busyRatio` is the staying pods' headroom while they restore the
state they take over and keep processing: smoothscale's leaving pods run their tasks until the copies are
caught up, so a scale-in accrues no backlog), only when nothing moves, no backlog beyond a tenth of the
target waits, and the last decision (a scale-up above all) is at least that window old.

What it does not do (yet): prefer off-peak hours, or weigh tasks of unequal rates (it sizes for tasks of
equal load, as the planner's `balanceBy: count` places them).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, replace
from enum import StrEnum
from typing import Final

from smoothscale.resource.autoscaling import AutoscalingSpec
from smoothscale.resource.durations import parse_duration

CAPACITY_SMOOTHING_SECONDS: Final = 120.0
"""Time constant of a pod's measured capacity: a property of the machine, it changes slowly."""

MIN_BUSY: Final = 0.05
"""Busy ratios below this are too small to divide by (an idle pod's capacity is not measured)."""

UP_TOLERANCE: Final = 0.1
"""A scale-out on load alone needs the load this much above the busy target (the HPA's tolerance)."""

BREACH_MARGIN: Final = 2.0
"""How far the backlog must exceed the predicted one to override a migration that is warming up."""

START_SECONDS: Final = 15.0
"""A new pod's start-up and its first scrape, before its warmups begin."""

PRIOR_RESTORE_RATE: Final = 10_000.0
"""Records/s of one restoring copy assumed until a restore has been measured (pessimistic)."""


class ScaleReason(StrEnum):
    """Why the autoscaler changed `spec.replicas` (an Event's reason and the journal's)."""

    LOAD = "LoadAboveTarget"
    """The input rate needs more pods at the target busy ratio."""
    BACKLOG = "BacklogAboveTarget"
    """The backlog would not drain within the lag target at the current size."""
    BREACH = "TargetBreachedWhileWarmingUp"
    """The backlog grew past the margin over what the migration in flight predicted."""
    HEADROOM = "LoadFitsFewerPods"
    """The window's peak load fits fewer pods with headroom."""
    BOUNDS = "OutsideMinMax"
    """`spec.replicas` is outside `minReplicas`..`maxReplicas`."""


@dataclass(frozen=True)
class AutoscalePolicy:
    """`spec.autoscaling` in numbers (seconds, ratios)."""

    min_replicas: int
    max_replicas: int
    max_lag_seconds: float
    busy_ratio: float
    scale_up_stabilization: float
    scale_down_stabilization: float


@dataclass(frozen=True)
class PodLoad:
    processed: float
    """Input records/s its active tasks processed."""
    busy: float | None
    """The fraction of the time its stream threads were busy (0..1); None: the pod reports none."""


@dataclass(frozen=True)
class LoadSample:
    """What one round observed of the app's load; rates in records per second."""

    now: float
    """Seconds on any fixed clock."""
    replicas: int
    """`spec.replicas` as it stands."""
    input_rate: float
    """Records arriving on the input topics (from Kafka's end offsets)."""
    backlog: float
    """Input records not yet processed (the consumer group's lag)."""
    pods: Mapping[str, PodLoad]
    tasks: int
    state_per_task: float
    """Mean changelog records a moved task restores (stateless tasks count 0)."""
    restore_rate: float | None
    """Measured records/s of one restoring copy; None: nothing restored since the last round."""
    max_warmups: int
    migrating: bool
    """Tasks are moving (warmups, leaving pods, pods starting)."""


@dataclass(frozen=True)
class Decision:
    """A change of `spec.replicas` and what it was decided on (the Event and the journal name them)."""

    at: float
    replicas: int
    previous: int
    reason: ScaleReason
    input_rate: float
    capacity: float
    capacity_measured: bool
    backlog: float
    predicted_seconds: float
    """How long the migration is expected to take (0 for a scale-down)."""
    predicted_backlog: float
    """The highest backlog expected while it runs."""

    @property
    def scales_up(self) -> bool:
        return self.replicas > self.previous

    def inputs(self) -> dict[str, float | int | bool | str]:
        """What the Event's message and the journal record name."""
        return {
            "replicas": self.replicas,
            "previous": self.previous,
            "reason": str(self.reason),
            "inputRate": round(self.input_rate, 1),
            "podCapacity": round(self.capacity, 1),
            "capacityMeasured": self.capacity_measured,
            "backlog": round(self.backlog),
            "predictedSeconds": round(self.predicted_seconds, 1),
            "predictedBacklog": round(self.predicted_backlog),
        }


@dataclass(frozen=True)
class AutoscalerMemory:
    """What the autoscaler keeps between rounds (memory only: after an operator restart it measures
    afresh, and the last decision's hold is lost, which costs at most one early decision)."""

    since: float | None = None
    """When it first observed the app: a scale-in waits for a full window of observations."""
    rate: float | None = None
    capacity: float | None = None
    measured: bool = False
    sampled_at: float | None = None
    restore_rate: float | None = None
    last: Decision | None = None
    last_up_at: float | None = None
    rates: tuple[tuple[float, float], ...] = ()
    """(time, input rate) of the rounds within the longer stabilisation window."""

    def observe(self, sample: LoadSample, policy: AutoscalePolicy) -> AutoscalerMemory:
        """This memory with one round's measurements folded in."""
        age = 0.0 if self.sampled_at is None else max(sample.now - self.sampled_at, 0.0)
        rate = sample.input_rate
        capacity, measured = _capacity(sample)
        if capacity is not None and (measured or not self.measured):
            keep = self.capacity if measured == self.measured else None
            capacity = _mean(keep, capacity, age, CAPACITY_SMOOTHING_SECONDS)
        else:
            capacity, measured = self.capacity, self.measured
        restore = self.restore_rate if sample.restore_rate is None else sample.restore_rate
        window = max(policy.scale_up_stabilization, policy.scale_down_stabilization)
        kept = tuple((t, r) for t, r in self.rates if sample.now - t < window)
        return replace(
            self,
            since=sample.now if self.since is None else self.since,
            rate=rate,
            capacity=capacity,
            measured=measured,
            sampled_at=sample.now,
            restore_rate=restore,
            rates=(*kept, (sample.now, rate)),
        )

    def rate_within(self, now: float, window: float, pick: Callable[[Iterable[float]], float]) -> float:
        """`pick` (min or max) of the input rates of the last `window` seconds (this round's included)."""
        return pick(r for t, r in self.rates if now - t <= window)


def _mean(mean: float | None, value: float, age: float, constant: float) -> float:
    if mean is None:
        return value
    keep = math.exp(-age / constant)
    return keep * mean + (1 - keep) * value


def _capacity(sample: LoadSample) -> tuple[float | None, bool]:
    """A pod's capacity (records/s at busy 1): measured from busy time where pods report it, else the
    busiest pod's rate (a lower bound)."""
    measured = [
        (p.processed, p.busy) for p in sample.pods.values() if p.busy is not None and p.busy >= MIN_BUSY
    ]
    if measured:
        processed = sum(r for r, _ in measured)
        busy = sum(b for _, b in measured)
        return processed / busy, True
    busiest = max((p.processed for p in sample.pods.values()), default=0.0)
    return (busiest, False) if busiest > 0 else (None, False)


def throughput(pods: int, capacity: float, tasks: int) -> float:
    """Records/s `pods` pods process at full busy time when `tasks` tasks of equal load are spread over
    them: the busiest pod runs `ceil(tasks / pods)` of them."""
    if pods <= 0 or tasks <= 0:
        return 0.0
    return capacity * tasks / math.ceil(tasks / min(pods, tasks))


def steady(rate: float, capacity: float, tasks: int, policy: AutoscalePolicy) -> int:
    """The fewest pods within the bounds that process `rate` at the busy target."""
    ceiling = max(policy.min_replicas, min(policy.max_replicas, max(tasks, 1)))
    for pods in range(policy.min_replicas, ceiling + 1):
        if throughput(pods, capacity, tasks) * policy.busy_ratio >= rate:
            return pods
    return ceiling


@dataclass(frozen=True)
class Forecast:
    """A scale-out's prediction: when its last moved task runs on a new pod, the backlog then and at its
    highest, and the backlog of the task that moves last (it waits on an old pod the whole migration)."""

    seconds: float
    backlog: float
    peak_backlog: float
    last_task_backlog: float


def forecast(sample: LoadSample, rate: float, capacity: float, restore_rate: float, to: int) -> Forecast:
    """A scale-out from `sample.replicas` to `to` pods, warmup batch by warmup batch as smoothscale
    migrates: the pods start, then `maxWarmupReplicas` tasks at a time restore their state (a task's
    changelog at the measured restore rate) and move; until a task has moved its old pod runs it, sharing
    its capacity with the tasks it still holds."""
    start, tasks = max(sample.replicas, 1), max(sample.tasks, 1)
    moving = math.ceil(tasks * (to - start) / to) if to > start else 0
    per_task = rate / tasks
    new_share = capacity / math.ceil(tasks / to) if to > 0 else 0.0

    def old_share(moved: int) -> float:
        return capacity / math.ceil((tasks - moved) / start)

    def processing(moved: int) -> float:
        return (tasks - moved) * old_share(moved) + moved * new_share

    backlog = max(0.0, sample.backlog + (rate - processing(0)) * START_SECONDS)
    last = sample.backlog / tasks + max(0.0, per_task - old_share(0)) * START_SECONDS
    peak = backlog
    if moving == 0 or sample.state_per_task <= 0:
        return Forecast(START_SECONDS, backlog, peak, last)
    warmups = max(sample.max_warmups, 1)
    batch = sample.state_per_task / restore_rate
    for moved in range(0, moving, warmups):
        backlog = max(0.0, backlog + (rate - processing(moved)) * batch)
        peak = max(peak, backlog)
        last = max(0.0, last + (per_task - old_share(moved)) * batch)
    return Forecast(START_SECONDS + math.ceil(moving / warmups) * batch, backlog, peak, last)


def drains_in_time(
    expected: Forecast, rate: float, capacity: float, tasks: int, pods: int, within: float
) -> bool:
    """Whether `pods` pods drain the forecast backlog, the app's and the last moved task's, within
    `within` seconds of the migration's end."""
    spare = throughput(pods, capacity, tasks) - rate
    task_spare = capacity / math.ceil(tasks / pods) - rate / max(tasks, 1)
    if spare <= 0 or task_spare <= 0:
        return False
    return expected.backlog / spare <= within and expected.last_task_backlog / task_spare <= within


def size_scale_out(
    sample: LoadSample, rate: float, capacity: float, restore_rate: float, policy: AutoscalePolicy
) -> tuple[int, Forecast]:
    """The fewest pods, from what `rate` needs (one more than now at least), whose migration leaves a
    backlog they drain within the lag target; the most allowed when none does."""
    ceiling = min(policy.max_replicas, sample.tasks)
    first = min(max(steady(rate, capacity, sample.tasks, policy), sample.replicas + 1), ceiling)
    for pods in range(first, ceiling + 1):
        expected = forecast(sample, rate, capacity, restore_rate, pods)
        if pods == ceiling or drains_in_time(
            expected, rate, capacity, sample.tasks, pods, policy.max_lag_seconds
        ):
            return pods, expected
    return ceiling, forecast(sample, rate, capacity, restore_rate, ceiling)


def decide(
    memory: AutoscalerMemory, sample: LoadSample, policy: AutoscalePolicy
) -> tuple[Decision | None, AutoscalerMemory]:
    """The replicas to set this round (None: keep them), and the memory after it."""
    memory = memory.observe(sample, policy)
    capacity, current = memory.capacity, sample.replicas
    bounded = min(max(current, policy.min_replicas), policy.max_replicas)
    if bounded != current:
        return _decided(memory, sample, bounded, ScaleReason.BOUNDS, 0.0, sample.backlog)
    if capacity is None or capacity <= 0:
        return None, memory  # nothing processed yet: no guess
    up = _scale_up(memory, sample, policy, capacity)
    if up is not None:
        return up
    return _scale_down(memory, sample, policy, capacity)


def _scale_up(
    memory: AutoscalerMemory, sample: LoadSample, policy: AutoscalePolicy, capacity: float
) -> tuple[Decision | None, AutoscalerMemory] | None:
    """A scale-out, sized in one step for the load and the backlog its own migration lets accrue; None
    when no scale-out is called for."""
    current, tasks, backlog = sample.replicas, sample.tasks, sample.backlog
    if current >= min(policy.max_replicas, tasks):
        return None
    # the scale-up stabilisation window: the lowest rate of the window is the one that lasted; a backlog
    # that cannot drain in time is no swing of the rate, and is sized for the rate it accrues at
    lasting = memory.rate_within(sample.now, policy.scale_up_stabilization, min)
    now_capacity = throughput(current, capacity, tasks)
    spare = now_capacity - sample.input_rate
    overloaded = memory.measured and lasting > now_capacity * policy.busy_ratio * (1 + UP_TOLERANCE)
    lagging = backlog > 0 and (spare <= 0 or backlog / spare > policy.max_lag_seconds)
    if not (overloaded or lagging):
        return None
    reason = ScaleReason.LOAD if overloaded else ScaleReason.BACKLOG
    rate = lasting if overloaded else max(lasting, sample.input_rate)
    last = memory.last
    if (
        last is not None
        and last.scales_up
        and (sample.migrating or sample.now < last.at + last.predicted_seconds)
    ):
        if backlog <= BREACH_MARGIN * max(last.predicted_backlog, rate * policy.max_lag_seconds):
            return None, memory  # its own migration's backlog: expected, wait for the new pods
        reason = ScaleReason.BREACH
    restore = memory.restore_rate or PRIOR_RESTORE_RATE
    pods, expected = size_scale_out(sample, rate, capacity, restore, policy)
    return _decided(memory, sample, pods, reason, expected.seconds, expected.peak_backlog)


def _scale_down(
    memory: AutoscalerMemory, sample: LoadSample, policy: AutoscalePolicy, capacity: float
) -> tuple[Decision | None, AutoscalerMemory]:
    """A scale-in to what the peak of the scale-down window needs with headroom, once nothing moves, no
    backlog waits and the last scale-up is a window old."""
    current, now = sample.replicas, sample.now
    if current <= policy.min_replicas or sample.migrating:
        return None, memory
    if memory.last is not None and now - memory.last.at < policy.scale_down_stabilization:
        return None, memory
    if memory.since is None or now - memory.since < policy.scale_down_stabilization:
        return None, memory  # not a window of observations yet (a new app, a restarted operator)
    peak = memory.rate_within(now, policy.scale_down_stabilization, max)
    if sample.backlog > 0.1 * peak * policy.max_lag_seconds:
        return None, memory
    target = steady(peak, capacity, sample.tasks, policy)
    if target >= current:
        return None, memory
    return _decided(memory, sample, target, ScaleReason.HEADROOM, 0.0, sample.backlog)


def _decided(
    memory: AutoscalerMemory,
    sample: LoadSample,
    replicas: int,
    reason: ScaleReason,
    predicted_seconds: float,
    predicted_backlog: float,
) -> tuple[Decision, AutoscalerMemory]:
    decision = Decision(
        at=sample.now,
        replicas=replicas,
        previous=sample.replicas,
        reason=reason,
        input_rate=memory.rate or 0.0,
        capacity=memory.capacity or 0.0,
        capacity_measured=memory.measured,
        backlog=sample.backlog,
        predicted_seconds=predicted_seconds,
        predicted_backlog=predicted_backlog,
    )
    last_up = sample.now if decision.scales_up else memory.last_up_at
    return decision, replace(memory, last=decision, last_up_at=last_up)


def autoscale_policy(spec: AutoscalingSpec, tasks: int) -> AutoscalePolicy:
    """`spec.autoscaling` in numbers; `maxReplicas` defaults to one pod per task."""
    ceiling = spec.max_replicas if spec.max_replicas is not None else max(tasks, spec.min_replicas)
    return AutoscalePolicy(
        min_replicas=spec.min_replicas,
        max_replicas=max(ceiling, spec.min_replicas),
        max_lag_seconds=parse_duration(spec.target.max_lag),
        busy_ratio=spec.target.busy_ratio,
        scale_up_stabilization=parse_duration(spec.scale_up_stabilization),
        scale_down_stabilization=parse_duration(spec.scale_down_stabilization),
    )
