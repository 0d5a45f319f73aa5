"""An indexed, canonically ordered view of a snapshot, shared by every step of the planner.

Tasks and clients get dense integer positions in natural order; the planner works on these positions and
numpy arrays so that 50,000 tasks stay cheap, and translates back to ids only when it writes the plan.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from itertools import chain

import numpy as np
import numpy.typing as npt

from smoothscale.assignor.models import PlannerConfig, RackStrategy, Snapshot
from smoothscale.assignor.ordering import natural_order
from smoothscale.contract.ordering import natural_key, natural_sorted

IntArray = npt.NDArray[np.int64]
FloatArray = npt.NDArray[np.float64]
BoolArray = npt.NDArray[np.bool_]


def caught_up_mask(lags: IntArray | FloatArray, acceptable: int) -> BoolArray:
    """`models.caught_up` over an array of (reported) lags."""
    mask: BoolArray = lags <= acceptable
    return mask


NO_CLIENT = -1
UNKNOWN_RACK = ""
"""The rack of every pod whose zone is unknown: last in `racks`, never named by an input partition (the
contract refuses empty rack names there), so no placement there costs traffic, and it is no other rack."""


@dataclass(frozen=True, slots=True)
class Cluster:
    config: PlannerConfig
    now: datetime
    task_ids: list[str]
    client_ids: list[str]
    racks: list[str]  # known racks in natural order, then UNKNOWN_RACK if some pod's zone is unknown
    subtopologies: list[str]
    subtopology: IntArray  # per task
    stateful: BoolArray  # per task
    weight: FloatArray  # per task
    changelog: IntArray  # per task
    client_rack: IntArray  # per client
    capacity: IntArray  # per client
    leaving: BoolArray  # per client
    expired: BoolArray  # per client: leaving and past scaleDownTimeoutSeconds
    deadline: list[datetime | None]  # per client: when its scale-down timeout expires
    current_active: IntArray  # per task: client position or NO_CLIENT
    current_standby: list[list[int]]  # per task
    current_warmup: list[list[int]]  # per task
    reported_lags: list[dict[int, int]]  # per task: client position -> reported lag
    lag_entries: tuple[IntArray, IntArray, IntArray]  # the same as flat (task, client, lag) arrays
    missing_partitions: IntArray  # (task, rack): input partitions with no replica in that rack
    unknown_inputs: BoolArray  # per task: an input partition whose replicas' racks are unknown

    @property
    def n_tasks(self) -> int:
        return len(self.task_ids)

    @property
    def n_clients(self) -> int:
        return len(self.client_ids)

    @property
    def traffic_cost(self) -> int:
        """The per-partition cross-rack cost, or 0 when rack awareness is off."""
        rack_aware = self.config.rack_aware
        return 0 if rack_aware.strategy is RackStrategy.NONE else rack_aware.traffic_cost

    def rack_known_mask(self) -> BoolArray:
        known: BoolArray = np.array([r != UNKNOWN_RACK for r in self.racks], dtype=np.bool_)[self.client_rack]
        return known

    def everyone_caught_up_mask(self) -> BoolArray:
        return caught_up_mask(self.changelog, self.config.acceptable_recovery_lag)

    def non_leaving(self) -> IntArray:
        return np.flatnonzero(~self.leaving).astype(np.int64)


def _missing_partitions(
    snapshot: Snapshot, task_order: list[int], racks: list[str]
) -> tuple[IntArray, BoolArray]:
    """Count, per task and rack, the input partitions read across racks (KIP-925's traffic cost); and per
    task, whether some input partition's racks are unknown (they count nowhere).

    Tasks share a few layouts of input racks: each distinct layout is counted once.
    """
    tasks = snapshot.tasks
    layouts = [tuple(map(tuple, tasks[i].input_partition_racks)) for i in task_order]
    distinct = {layout: n for n, layout in enumerate(dict.fromkeys(layouts))}
    rack_pos = {rack: i for i, rack in enumerate(racks)}
    rows = np.array([_missing_row(layout, rack_pos) for layout in distinct], dtype=np.int64)
    unknown = np.array([not all(layout) for layout in distinct], dtype=np.bool_)
    which = np.fromiter(map(distinct.__getitem__, layouts), dtype=np.int64, count=len(layouts))
    return rows.reshape(len(distinct), len(racks))[which], unknown[which]


def _missing_row(layout: tuple[tuple[str, ...], ...], rack_pos: dict[str, int]) -> list[int]:
    """Per rack, the partitions of `layout` (replicas' racks per partition) with no replica there."""
    partitions = [frozenset(p) for p in layout if p]
    row = [len(partitions)] * len(rack_pos)
    if partitions and UNKNOWN_RACK in rack_pos:
        row[rack_pos[UNKNOWN_RACK]] = 0  # where the pod is, is unknown: no traffic counted
    for replicas in partitions:
        for rack in replicas:
            if rack in rack_pos:
                row[rack_pos[rack]] -= 1
    return row


def _flat_lags(reported: list[dict[int, int]]) -> tuple[IntArray, IntArray, IntArray]:
    tasks, clients = flatten(reported)
    values = chain.from_iterable(r.values() for r in reported)
    lags = np.fromiter(values, dtype=np.int64, count=len(clients))
    return tasks, clients, lags


def flatten(per_task: Sequence[Collection[int]]) -> tuple[IntArray, IntArray]:
    """(task, client) arrays of a per-task collection of clients (a dict's keys are its clients)."""
    sizes = np.fromiter(map(len, per_task), dtype=np.int64, count=len(per_task))
    tasks = np.repeat(np.arange(len(per_task), dtype=np.int64), sizes)
    clients = np.fromiter(chain.from_iterable(per_task), dtype=np.int64, count=int(sizes.sum()))
    return tasks, clients


def build_cluster(snapshot: Snapshot) -> Cluster:
    config = snapshot.config
    task_order = natural_order([t.id for t in snapshot.tasks])
    client_order = sorted(range(len(snapshot.clients)), key=lambda i: natural_key(snapshot.clients[i].id))
    tasks = [snapshot.tasks[i] for i in task_order]
    clients = [snapshot.clients[i] for i in client_order]
    task_pos = {task.id: i for i, task in enumerate(tasks)}
    racks = natural_sorted({c.rack for c in clients if c.rack is not None})
    if any(c.rack is None for c in clients):
        racks.append(UNKNOWN_RACK)
    rack_pos = {rack: i for i, rack in enumerate(racks)}
    subtopologies = natural_sorted({t.subtopology for t in tasks})
    sub_pos = {name: i for i, name in enumerate(subtopologies)}

    missing, unknown_inputs = _missing_partitions(snapshot, task_order, racks)
    timeout = config.scale_down_timeout_seconds
    deadline: list[datetime | None] = [
        None if c.leaving_since is None or timeout is None else c.leaving_since + timedelta(seconds=timeout)
        for c in clients
    ]
    expired = np.array([d is not None and d <= snapshot.now for d in deadline] or [], dtype=np.bool_).reshape(
        len(clients)
    )

    current_active = np.full(len(tasks), NO_CLIENT, dtype=np.int64)
    current_standby: list[list[int]] = [[] for _ in tasks]
    current_warmup: list[list[int]] = [[] for _ in tasks]
    reported_lags: list[dict[int, int]] = [{} for _ in tasks]
    position = task_pos.__getitem__
    for c, client in enumerate(clients):
        current_active[list(map(position, client.active))] = c
        for task in map(position, client.standby):
            current_standby[task].append(c)
        for task in map(position, client.warmup):
            current_warmup[task].append(c)
        for task, lag in zip(map(position, client.lags), client.lags.values(), strict=True):
            reported_lags[task][c] = lag

    return Cluster(
        config=config,
        now=snapshot.now,
        task_ids=[t.id for t in tasks],
        client_ids=[c.id for c in clients],
        racks=racks,
        subtopologies=subtopologies,
        subtopology=np.array([sub_pos[t.subtopology] for t in tasks], dtype=np.int64),
        stateful=np.array([t.stateful for t in tasks], dtype=np.bool_),
        weight=np.array([t.weight for t in tasks], dtype=np.float64),
        changelog=np.array([t.changelog_offsets for t in tasks], dtype=np.int64),
        client_rack=np.array([rack_pos[c.rack or UNKNOWN_RACK] for c in clients], dtype=np.int64),
        capacity=np.array([c.capacity for c in clients], dtype=np.int64),
        leaving=np.array([c.leaving_since is not None for c in clients], dtype=np.bool_),
        expired=expired,
        deadline=deadline,
        current_active=current_active,
        current_standby=current_standby,
        current_warmup=current_warmup,
        reported_lags=reported_lags,
        lag_entries=_flat_lags(reported_lags),
        missing_partitions=missing,
        unknown_inputs=unknown_inputs,
    )
