"""`plan(snapshot) -> Plan`: the pure, deterministic function behind `smoothscale plan` (Contract 1)."""

from __future__ import annotations

import gc
import math
from collections.abc import Iterator
from contextlib import contextmanager

import numpy as np

from smoothscale.assignor.cluster import NO_CLIENT, Cluster, IntArray, build_cluster
from smoothscale.assignor.models import ClientTarget, Followup, Plan, PlanStats, RackUnknown, Snapshot
from smoothscale.assignor.movement import Assignment, plan_movements
from smoothscale.assignor.target import Holdings, Target, compute_target, current_holdings
from smoothscale.assignor.validation import validate_snapshot
from smoothscale.contract.publication import ClientAssignment

_FIXED_POINT_ROUNDS = 4


def plan(snapshot: Snapshot) -> Plan:
    """Plan one app: raises `SnapshotError` for inconsistent input, never returns a rule-breaking plan."""
    with _without_cyclic_gc():
        return _plan(snapshot)


@contextmanager
def _without_cyclic_gc() -> Iterator[None]:
    """Pause the cyclic garbage collector while planning.

    A plan allocates hundreds of thousands of small lists and dicts that die by reference counting; each
    allocation burst would otherwise trigger full collections that re-scan the whole snapshot, a third of
    the wall time at 50,000 tasks. The previous state is restored however planning ends.
    """
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


def _plan(snapshot: Snapshot) -> Plan:
    validate_snapshot(snapshot)
    cluster = build_cluster(snapshot)
    target = compute_target(cluster, current_holdings(cluster))
    assignment = plan_movements(cluster, target)
    for _ in range(_FIXED_POINT_ROUNDS):
        if not _is_stable(target, assignment):
            break
        # KIP-441 rule 5: a stable plan fed back must come back unchanged. Re-solve as if it had been
        # published; should a different target win, aim for that one now rather than one round later.
        again = compute_target(cluster, _as_published(cluster, target))
        if _same_target(again, target):
            break
        target = again
        assignment = plan_movements(cluster, target)
    return _render(cluster, target, assignment)


def _as_published(cluster: Cluster, target: Target) -> Holdings:
    return Holdings(target.active, target.standby, [[] for _ in range(cluster.n_tasks)])


def _same_target(a: Target, b: Target) -> bool:
    return bool(np.array_equal(a.active, b.active)) and a.standby == b.standby


def _is_stable(target: Target, assignment: Assignment) -> bool:
    return (
        bool(np.array_equal(target.active, assignment.active))
        and target.standby == assignment.standby
        and not any(assignment.warmup)
    )


def _per_client(cluster: Cluster, per_task: list[list[int]]) -> list[list[str]]:
    result: list[list[str]] = [[] for _ in range(cluster.n_clients)]
    for task_id, clients in zip(cluster.task_ids, per_task, strict=True):
        for client in clients:
            result[client].append(task_id)
    return result


def _actives(cluster: Cluster, active: IntArray) -> list[list[str]]:
    return _per_client(cluster, [[c] for c in active.tolist()])


def _cross_rack_cost(cluster: Cluster, active: IntArray) -> int:
    per_task = cluster.missing_partitions[np.arange(cluster.n_tasks), cluster.client_rack[active]]
    return int(per_task.sum()) * int(cluster.config.rack_aware.traffic_cost)


def _active_imbalance(cluster: Cluster, active: IntArray) -> float:
    clients = cluster.non_leaving()
    if len(clients) == 0:
        return 0.0
    counts = np.bincount(active[active != NO_CLIENT], minlength=cluster.n_clients)[clients]
    per_unit = counts / cluster.capacity[clients]
    return round(float(per_unit.max() - per_unit.min()), 6)


def _followup(cluster: Cluster, assignment: Assignment) -> Followup:
    warmups = sum(map(len, assignment.warmup))
    reasons = []
    if warmups:
        reasons.append(f"{warmups} warmup(s) restoring")
    if assignment.waiting:
        reasons.append(f"{assignment.waiting} move(s) waiting for a warmup slot")
    delay = cluster.config.probing_interval_seconds
    holding_leaving: list[int] = np.unique(assignment.active[cluster.leaving[assignment.active]]).tolist()
    deadlines = [cluster.deadline[c] for c in holding_leaving if cluster.deadline[c] is not None]
    if holding_leaving:
        reasons.append(f"{len(holding_leaving)} leaving pod(s) still hold actives")
    if deadlines:
        until = min(d for d in deadlines if d is not None) - cluster.now
        delay = min(delay, max(until.total_seconds(), 1.0))
    if not reasons:
        reasons.append("standbys restoring toward the target")
    return Followup(reason="; ".join(reasons), probe_after_seconds=math.ceil(delay * 1000) / 1000)


def _render(cluster: Cluster, target: Target, assignment: Assignment) -> Plan:
    stable = _is_stable(target, assignment)
    actives = _actives(cluster, assignment.active)
    standbys = _per_client(cluster, assignment.standby)
    warmups = _per_client(cluster, assignment.warmup)
    target_actives = _actives(cluster, target.active)
    target_standbys = _per_client(cluster, target.standby)
    moved = int(
        np.count_nonzero(
            (cluster.current_active != NO_CLIENT) & (cluster.current_active != assignment.active)
        )
    )
    return Plan.model_construct(
        assignment={
            client: ClientAssignment.model_construct(
                active=actives[c], standby=standbys[c], warmup=warmups[c]
            )
            for c, client in enumerate(cluster.client_ids)
        },
        target={
            client: ClientTarget.model_construct(active=target_actives[c], standby=target_standbys[c])
            for c, client in enumerate(cluster.client_ids)
        },
        stable=stable,
        followup=None if stable else _followup(cluster, assignment),
        stats=PlanStats.model_construct(
            cross_rack_cost=_cross_rack_cost(cluster, assignment.active),
            active_imbalance=_active_imbalance(cluster, assignment.active),
            moved_actives=moved,
            warmups=sum(map(len, assignment.warmup)),
            target_cross_rack_cost=_cross_rack_cost(cluster, target.active),
            target_active_imbalance=_active_imbalance(cluster, target.active),
        ),
        explain=dict(zip(cluster.task_ids, assignment.explain, strict=True)),
        rack_unknown=_rack_unknown(cluster),
    )


def _rack_unknown(cluster: Cluster) -> RackUnknown:
    """The pods whose zone is unknown and the tasks with an input partition of unknown racks."""
    known = cluster.rack_known_mask()
    pods = [cluster.client_ids[c] for c in np.flatnonzero(~known).tolist()]
    tasks = [cluster.task_ids[t] for t in np.flatnonzero(cluster.unknown_inputs).tolist()]
    return RackUnknown.model_construct(pods=pods, tasks=tasks)
