"""The simulated cluster: pods, tasks, the state copies pods hold, and how they evolve between two events.

Between two events every rate is constant, so the state moves linearly and the simulator jumps straight
to the next instant something changes (`next_change`): a restore finishing or a backlog drained. Rates:

- A copy *restores* while its pod is up, the pod's applied generation assigns it (active, standby or
  warmup) and it is behind (lag > 0). Each restoring copy reads `min(perCopy, perPod / restoring copies on
  the pod)` records a second. A caught-up copy keeps up with its changelog (restore bandwidth is far above
  one task's input rate) and takes no share. A copy that is not assigned, or whose pod is down, falls
  behind as the changelog grows; a lag never exceeds the task's changelog size (compaction: a copy can
  always restore from scratch instead).
- An active copy *processes* once it is caught up (lag 0): Kafka Streams restores an active to the end of
  its changelog before processing it. The pod's processing rate is shared equally by its processing tasks
  (a slice a task does not need is not handed to the others: a conservative simplification). A task
  processes its input rate, or its whole slice while it has a backlog; it writes its changelog at the rate
  it processes. A record of a task costs the task's weight (its subtopology's `weight`, 1 by default) in
  records of the pod's processing rate, so that a pod's load is the sum of its actives' weights, as the
  planner's `balanceBy: weight` assumes. A task nobody processes accumulates its input as backlog.

Tasks and pods are positions into numpy arrays; copies are a sparse table, so the cost of a step grows
with the number of copies, not tasks x pods.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np
import numpy.typing as npt

from smoothscale.assignor.models import Task
from smoothscale.contract.publication import ClientAssignment
from smoothscale.simulation.scenario import PodSpec

FloatArray = npt.NDArray[np.float64]
IntArray = npt.NDArray[np.int64]
BoolArray = npt.NDArray[np.bool_]

NONE, ACTIVE, STANDBY, WARMUP = 0, 1, 2, 3
"""Roles of a copy in its pod's applied generation (NONE: state on disk, not assigned)."""

_DONE = 1e-6
"""Records below which a restore or a backlog counts as finished (floating-point dust)."""


@dataclass(slots=True)
class Pod:
    name: str
    ordinal: int
    zone: int
    spec: PodSpec
    revision: str
    """The template revision it was created from (a host swap is a new one)."""
    index: int
    """Its position in `Cluster.pods` (and in every per-pod array): a name may be reused, a position not."""
    incarnation: int
    """Unique in the cluster, renewed by every crash: what the pod was about to apply is lost."""
    up: bool = True
    removed: bool = False
    leaving_since: float | None = None
    leaving_reason: str | None = None
    """Why the operator marked it leaving (`LeavingReason`); None when a person did, or it is not leaving."""
    created: float = 0.0
    """When the operator created it (simulation seconds)."""
    applied_generation: int = -1
    applied: ClientAssignment = field(default_factory=ClientAssignment)


@dataclass(slots=True)
class Tasks:
    models: list[Task]  # the planner's view, built once
    ids: list[str]
    stateful: BoolArray
    size: FloatArray  # changelog records a copy without state restores
    input_rate: FloatArray
    weight: FloatArray  # processing cost of one record, in records of a pod's processing rate
    backlog: FloatArray  # input records not processed yet
    remote: FloatArray  # (task, zone): fraction of the task's input partitions with no replica there


class Copies:
    """Sparse table of (task, pod) state copies: lag in records and role in the pod's applied generation."""

    def __init__(self) -> None:
        self.task = np.zeros(0, dtype=np.int64)
        self.pod = np.zeros(0, dtype=np.int64)
        self.lag = np.zeros(0, dtype=np.float64)
        self.role = np.zeros(0, dtype=np.int8)
        self.by_pod: dict[int, dict[int, int]] = {}  # pod -> task -> row

    def __len__(self) -> int:
        return len(self.task)

    def row(self, task: int, pod: int) -> int | None:
        return self.by_pod.get(pod, {}).get(task)

    def add(self, rows: list[tuple[int, int, float]]) -> None:
        """Append copies (task, pod, lag) with no role; the caller guarantees none exists yet."""
        start = len(self.task)
        self.task = np.concatenate([self.task, np.array([r[0] for r in rows], dtype=np.int64)])
        self.pod = np.concatenate([self.pod, np.array([r[1] for r in rows], dtype=np.int64)])
        self.lag = np.concatenate([self.lag, np.array([r[2] for r in rows], dtype=np.float64)])
        self.role = np.concatenate([self.role, np.zeros(len(rows), dtype=np.int8)])
        for offset, (task, pod, _) in enumerate(rows):
            self.by_pod.setdefault(pod, {})[task] = start + offset

    def drop_pod(self, pod: int) -> None:
        keep = self.pod != pod
        self.task, self.pod, self.lag, self.role = (
            self.task[keep],
            self.pod[keep],
            self.lag[keep],
            self.role[keep],
        )
        self.by_pod = {}
        for row, (task, owner) in enumerate(zip(self.task.tolist(), self.pod.tolist(), strict=True)):
            self.by_pod.setdefault(owner, {})[task] = row


@dataclass(frozen=True, slots=True)
class PodArrays:
    """Per-pod values as arrays indexed like `Cluster.pods`; rebuilt only when pods change."""

    up: BoolArray
    zone: IntArray
    per_copy: FloatArray  # restore records/s of one copy
    per_pod: FloatArray  # restore records/s of all copies together
    process: FloatArray  # processed records/s


@dataclass(frozen=True, slots=True)
class Rates:
    """Everything that is constant until the next change: who restores, who processes, how fast."""

    restoring: BoolArray  # per copy
    restore_rate: FloatArray  # per copy, records/s (0 unless restoring)
    lag_rate: FloatArray  # per copy, d lag / dt
    processing: BoolArray  # per task
    owner: IntArray  # per task: pod whose applied active copy it is, or -1
    throughput: FloatArray  # per task, records/s processed
    backlog_rate: FloatArray  # per task, d backlog / dt


class Cluster:
    """The ground truth the operator observes and acts on, and the physics between two events."""

    def __init__(self, zones: list[str], tasks: Tasks) -> None:
        self.zones = zones
        self.tasks = tasks
        self.pods: list[Pod] = []
        self.by_name: dict[str, int] = {}
        """The position of the latest pod of each name."""
        self.task_index = {task.id: i for i, task in enumerate(tasks.models)}
        self.copies = Copies()
        self._incarnations = itertools.count()
        self._rates: Rates | None = None
        self._pod_arrays: PodArrays | None = None

    # -- membership --------------------------------------------------------------------------------

    def add_pod(
        self, name: str, ordinal: int, zone: int, spec: PodSpec, revision: str, created: float
    ) -> Pod:
        index = len(self.pods)
        pod = Pod(name, ordinal, zone, spec, revision, index, next(self._incarnations), created=created)
        self.by_name[name] = index
        self.pods.append(pod)
        self.changed(pods=True)
        return pod

    def present(self) -> list[Pod]:
        """Pods that exist (up or down), in ordinal order."""
        return [p for p in self.pods if not p.removed]

    def up(self) -> list[Pod]:
        return [p for p in self.pods if p.up]

    def index(self, pod: Pod) -> int:
        return pod.index

    def crash(self, pod: Pod, *, keep_state: bool) -> None:
        """The pod stops at once; its state stays on its volume or is gone."""
        pod.up = False
        pod.incarnation = next(self._incarnations)
        pod.applied_generation = -1
        pod.applied = ClientAssignment()
        p = self.index(pod)
        if keep_state:
            self.copies.role[self.copies.pod == p] = NONE
        else:
            self.copies.drop_pod(p)
        self.changed(pods=True)

    def restart(self, pod: Pod) -> None:
        pod.up = True
        self.changed(pods=True)

    def remove(self, pod: Pod) -> None:
        pod.up = False
        pod.removed = True
        self.copies.drop_pod(self.index(pod))
        self.changed(pods=True)

    # -- assignments -------------------------------------------------------------------------------

    def apply(self, pod: Pod, generation: int, assignment: ClientAssignment) -> None:
        """The pod switches to a generation: stops what it lost, restores or runs what it got."""
        p = self.index(pod)
        copies = self.copies
        rows = copies.by_pod.get(p, {})
        if rows:
            copies.role[list(rows.values())] = NONE
        roles = ((ACTIVE, assignment.active), (STANDBY, assignment.standby), (WARMUP, assignment.warmup))
        held = [(role, self.task_index[t]) for role, tasks in roles for t in tasks]
        new = [(t, p, float(self.tasks.size[t])) for _, t in held if t not in rows]
        if new:
            copies.add(new)
            rows = copies.by_pod[p]
        for role, t in held:
            copies.role[rows[t]] = role
        pod.applied_generation = generation
        pod.applied = assignment
        self.changed()

    def set_input_rate(self, tasks: IntArray, factor: float) -> None:
        self.tasks.input_rate[tasks] *= factor
        self.changed()

    # -- physics -----------------------------------------------------------------------------------

    def changed(self, *, pods: bool = False) -> None:
        """Something rates depend on changed (`pods`: a pod came, went, stopped or started)."""
        self._rates = None
        if pods:
            self._pod_arrays = None

    def pod_arrays(self) -> PodArrays:
        if self._pod_arrays is None:
            pods = self.pods

            def values(get: Callable[[Pod], float]) -> FloatArray:
                return np.fromiter((get(p) for p in pods), dtype=np.float64, count=len(pods))

            self._pod_arrays = PodArrays(
                up=np.fromiter((p.up for p in pods), dtype=np.bool_, count=len(pods)),
                zone=np.fromiter((p.zone for p in pods), dtype=np.int64, count=len(pods)),
                per_copy=values(lambda p: p.spec.restore_records_per_second_per_copy),
                per_pod=values(lambda p: p.spec.restore_records_per_second_per_pod),
                process=values(lambda p: p.spec.process_records_per_second),
            )
        return self._pod_arrays

    def rates(self) -> Rates:
        if self._rates is None:
            self._rates = self._compute_rates()
        return self._rates

    def _compute_rates(self) -> Rates:
        tasks, copies = self.tasks, self.copies
        n_pods = len(self.pods)
        pods = self.pod_arrays()
        per_copy, per_pod, process = pods.per_copy, pods.per_pod, pods.process

        live = pods.up[copies.pod] & (copies.role != NONE)
        restoring = live & (copies.lag > 0)
        active_rows = np.flatnonzero(live & (copies.role == ACTIVE))
        owner = np.full(len(tasks.models), -1, dtype=np.int64)
        owner[copies.task[active_rows]] = copies.pod[active_rows]
        processing = np.zeros(len(tasks.models), dtype=np.bool_)
        processing[copies.task[active_rows]] = copies.lag[active_rows] <= 0

        n_processing = np.bincount(owner[processing], minlength=n_pods)
        share = np.zeros(len(tasks.models), dtype=np.float64)
        busy = owner[processing]
        share[processing] = process[busy] / n_processing[busy] / tasks.weight[processing]
        has_backlog = tasks.backlog > 0
        throughput = np.where(
            processing, np.where(has_backlog, share, np.minimum(share, tasks.input_rate)), 0.0
        )
        growth = np.where(tasks.stateful, throughput, 0.0)

        n_restoring = np.bincount(copies.pod[restoring], minlength=n_pods)
        restore_rate = np.zeros(len(copies), dtype=np.float64)
        where = copies.pod[restoring]
        restore_rate[restoring] = np.minimum(per_copy[where], per_pod[where] / n_restoring[where])
        lag_rate = np.where(restoring, growth[copies.task] - restore_rate, 0.0)
        lag_rate = np.where(live, lag_rate, growth[copies.task])  # unassigned state falls behind
        return Rates(
            restoring=restoring,
            restore_rate=restore_rate,
            lag_rate=lag_rate,
            processing=processing,
            owner=owner,
            throughput=throughput,
            backlog_rate=tasks.input_rate - throughput,
        )

    def next_change(self) -> float:
        """Seconds until a restore finishes or a backlog drains (each changes some rate); inf if never."""
        rates, copies, backlog = self.rates(), self.copies, self.tasks.backlog
        closing = rates.restoring & (rates.lag_rate < 0)
        draining = (backlog > 0) & (rates.backlog_rate < 0)
        times = np.concatenate(
            [
                copies.lag[closing] / -rates.lag_rate[closing],
                backlog[draining] / -rates.backlog_rate[draining],
            ]
        )
        return float(times.min()) if len(times) else math.inf

    def advance(self, seconds: float) -> None:
        """Let `seconds` pass at the current rates (no change may fall inside: see `next_change`)."""
        if seconds <= 0:
            return
        rates, copies, tasks = self.rates(), self.copies, self.tasks
        lag = copies.lag + rates.lag_rate * seconds
        lag[rates.restoring & (lag < _DONE)] = 0.0
        copies.lag = np.clip(lag, 0.0, tasks.size[copies.task])
        backlog = tasks.backlog + rates.backlog_rate * seconds
        backlog[backlog < _DONE] = 0.0
        finished = bool((rates.restoring & (copies.lag == 0)).any()) or bool(
            ((tasks.backlog > 0) & (backlog == 0)).any()
        )
        tasks.backlog = backlog
        if finished:
            self.changed()

    # -- what pods report --------------------------------------------------------------------------

    def reported_lags(self, pod: Pod) -> dict[str, int]:
        """Lag of every stateful task the pod has state for (assigned or not), as KIP-441 members report."""
        rows = self.copies.by_pod.get(self.index(pod), {})
        ids, stateful, lag = self.tasks.ids, self.tasks.stateful, self.copies.lag
        return {ids[t]: math.ceil(lag[r]) for t, r in rows.items() if stateful[t]}
