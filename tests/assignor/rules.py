"""An oracle for the planner's rules (Contract 1, docs/architecture.md) and a small multi-step simulator.

The oracle is written from the contract, not from the planner: `check_plan` re-derives every rule from the
snapshot alone (ranks, candidates, expiry, quotas) and returns one readable message per violation, so that a
failing property test says which rule broke, for which task and client, and why. Messages start with the
rule's tag (``R1`` ... ``R9``, ``STABLE``, ``FOLLOWUP``, ``EXPLAIN``) so tests can also assert *which* rule a
deliberately broken plan violates.

The simulator (`advance` and the small snapshot editors) plays the operator's part between two plans:
publish the plan's assignment, let restores finish, let time pass, add or remove pods.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from datetime import UTC, datetime, timedelta
from typing import Any

from smoothscale.assignor.models import BalanceBy, Client, ClientTarget, Plan, RackStrategy, Snapshot, Task
from smoothscale.contract.publication import ClientAssignment

NOW = datetime(2026, 11, 21, 10, 0, tzinfo=UTC)
"""The planning instant of every hand-built scenario: fixed, so that expiry arithmetic is exact."""

EPSILON = 1e-9
"""Tolerance for comparisons of load per unit of capacity (ratios of small integers)."""

TAGS = ("R1", "R2", "R3", "R4", "R5", "R6", "R9", "STABLE", "FOLLOWUP", "EXPLAIN")


# --------------------------------------------------------------------------------------------------------
# Running the planner
# --------------------------------------------------------------------------------------------------------


def run_planner(snapshot: Snapshot) -> Plan:
    """Call the planner under test; imported lazily so that the oracle itself never depends on it."""
    from smoothscale.assignor.planner import plan  # noqa: PLC0415 - the module under test, kept lazy

    return plan(snapshot)


def dump(snapshot: Snapshot) -> str:
    """The snapshot as contract JSON: what a failure message quotes so the case can be replayed by hand."""
    return snapshot.model_dump_json(by_alias=True)


# --------------------------------------------------------------------------------------------------------
# Building snapshots by hand
# --------------------------------------------------------------------------------------------------------


def make_task(
    task_id: str,
    *,
    stateful: bool = True,
    offsets: int = 1_000_000,
    racks: Sequence[Sequence[str]] = (),
    subtopology: str | None = None,
) -> dict[str, Any]:
    """A task in contract JSON; its subtopology defaults to the part of the id before the underscore."""
    return {
        "id": task_id,
        "subtopology": subtopology if subtopology is not None else task_id.split("_", 1)[0],
        "stateful": stateful,
        "changelogOffsets": offsets,
        "inputPartitionRacks": [list(r) for r in racks],
    }


def make_client(
    client_id: str,
    *,
    rack: str | None = "zone-a",
    capacity: int = 1,
    active: Sequence[str] = (),
    standby: Sequence[str] = (),
    warmup: Sequence[str] = (),
    lags: Mapping[str, int] | None = None,
    leaving_since: datetime | None = None,
    stateless: Iterable[str] = (),
) -> dict[str, Any]:
    """A client in contract JSON.

    Every stateful copy the client holds is reported at lag 0 unless `lags` says otherwise, because that is
    the common case (a pod that processes or mirrors a task is caught up on it) and it keeps scenarios
    short. `stateless` names held tasks that must not get a lag entry (a pod has no state for them).
    """
    no_lag = set(stateless)
    reported = {t: 0 for t in (*active, *standby, *warmup) if t not in no_lag}
    reported.update(lags or {})
    return {
        "id": client_id,
        "rack": rack,
        "capacity": capacity,
        "leavingSince": leaving_since.isoformat() if leaving_since else None,
        "lags": reported,
        "active": list(active),
        "standby": list(standby),
        "warmup": list(warmup),
    }


def make_snapshot(
    tasks: Sequence[Mapping[str, Any]],
    clients: Sequence[Mapping[str, Any]],
    *,
    now: datetime = NOW,
    num_standbys: int = 0,
    acceptable_recovery_lag: int = 10_000,
    max_warmup_replicas: int = 2,
    strategy: str = "balance_subtopology",
    traffic_cost: int = 10,
    non_overlap_cost: int = 1,
    scale_down_timeout_seconds: float | None = None,
    probing_interval_seconds: float = 600.0,
) -> Snapshot:
    """A validated snapshot from contract JSON pieces (camelCase), as a user or the operator would send."""
    return Snapshot.model_validate(
        {
            "now": now.isoformat(),
            "config": {
                "numStandbys": num_standbys,
                "acceptableRecoveryLag": acceptable_recovery_lag,
                "maxWarmupReplicas": max_warmup_replicas,
                "rackAware": {
                    "strategy": strategy,
                    "trafficCost": traffic_cost,
                    "nonOverlapCost": non_overlap_cost,
                },
                "scaleDownTimeoutSeconds": scale_down_timeout_seconds,
                "probingIntervalSeconds": probing_interval_seconds,
            },
            "tasks": list(tasks),
            "clients": list(clients),
        }
    )


# --------------------------------------------------------------------------------------------------------
# Editing snapshots: the operator's side of a scenario
# --------------------------------------------------------------------------------------------------------


def _replace_clients(snapshot: Snapshot, clients: Sequence[Client], now: datetime | None = None) -> Snapshot:
    data = snapshot.model_dump(by_alias=True, mode="json")
    data["clients"] = [c.model_dump(by_alias=True, mode="json") for c in clients]
    if now is not None:
        data["now"] = now.isoformat()
    return Snapshot.model_validate(data)


def advance(snapshot: Snapshot, plan: Plan, caught_up: bool = True, seconds: float = 60.0) -> Snapshot:
    """The snapshot after the operator has published `plan.assignment` and `seconds` have passed.

    With `caught_up`, every copy a client now holds (active, standby, warmup) has finished restoring: its lag
    becomes 0. Lags of state a client no longer holds are kept (the state stays on disk, as in KIP-441), and
    `leavingSince` is kept, so a leaving pod's timeout keeps running. A client the plan does not mention
    ends up holding nothing.
    """
    clients = []
    for client in snapshot.clients:
        assigned = plan.assignment.get(client.id, ClientAssignment())
        lags = dict(client.lags)
        if caught_up:
            stateful = {t.id for t in snapshot.tasks if t.stateful}
            for task in (*assigned.active, *assigned.standby, *assigned.warmup):
                if task in stateful:
                    lags[task] = 0
        clients.append(
            client.model_copy(
                update={
                    "active": list(assigned.active),
                    "standby": list(assigned.standby),
                    "warmup": list(assigned.warmup),
                    "lags": lags,
                }
            )
        )
    return _replace_clients(snapshot, clients, snapshot.now + timedelta(seconds=seconds))


def add_client(snapshot: Snapshot, client: Mapping[str, Any]) -> Snapshot:
    """A new pod joins (contract JSON, e.g. from `make_client`)."""
    return _replace_clients(snapshot, [*snapshot.clients, Client.model_validate(client)])


def remove_client(snapshot: Snapshot, client_id: str) -> Snapshot:
    """A pod is gone (crashed or deleted): it and everything it held disappear from the snapshot."""
    return _replace_clients(snapshot, [c for c in snapshot.clients if c.id != client_id])


def mark_leaving(snapshot: Snapshot, client_id: str, since: datetime) -> Snapshot:
    """The operator annotates a pod as leaving since `since`."""
    return _replace_clients(
        snapshot,
        [c.model_copy(update={"leaving_since": since}) if c.id == client_id else c for c in snapshot.clients],
    )


def set_lags(snapshot: Snapshot, client_id: str, lags: Mapping[str, int]) -> Snapshot:
    """A pod reports new lags for some tasks (restores progressed, or its state fell behind)."""
    clients = [
        c.model_copy(update={"lags": {**c.lags, **lags}}) if c.id == client_id else c
        for c in snapshot.clients
    ]
    return _replace_clients(snapshot, clients)


# --------------------------------------------------------------------------------------------------------
# Facts about a snapshot, derived from the contract
# --------------------------------------------------------------------------------------------------------


def lag(task: Task, client: Client) -> int:
    """The lag a client has on a task; a task missing from `lags` is a full changelog behind."""
    return client.lags.get(task.id, task.changelog_offsets)


def rank(snapshot: Snapshot, client: Client, task: Task) -> int:
    """KIP-441's rank: 0 within `acceptableRecoveryLag`, else the lag. Stateless tasks rank 0 everywhere."""
    if not task.stateful:
        return 0
    value = lag(task, client)
    return 0 if value <= snapshot.config.acceptable_recovery_lag else value


def is_leaving(client: Client) -> bool:
    return client.leaving_since is not None


def timeout_expired(snapshot: Snapshot, client: Client) -> bool:
    """Expired means now - leavingSince >= scaleDownTimeoutSeconds; a null timeout never expires."""
    timeout = snapshot.config.scale_down_timeout_seconds
    if client.leaving_since is None or timeout is None:
        return False
    return (snapshot.now - client.leaving_since).total_seconds() >= timeout


def current_active(snapshot: Snapshot) -> dict[str, str]:
    """Task id -> the client that holds it active in the snapshot's published assignment."""
    owners: dict[str, str] = {}
    for client in snapshot.clients:
        for task in client.active:
            owners.setdefault(task, client.id)
    return owners


def active_candidates(
    snapshot: Snapshot, task: Task, owners: Mapping[str, str] | None = None
) -> list[Client]:
    """Who may hold the task active now: non-leaving clients, plus its current leaving owner until expiry.

    `owners` (`current_active(snapshot)`, passed in when checking every task) keeps the oracle linear."""
    owner = (owners if owners is not None else current_active(snapshot)).get(task.id)
    return [
        c
        for c in snapshot.clients
        if not is_leaving(c) or (c.id == owner and not timeout_expired(snapshot, c))
    ]


def moved_actives(snapshot: Snapshot, plan: Plan) -> list[tuple[str, str | None, str]]:
    """(task, previous active client or None, new active client) for every active that changes client."""
    before = current_active(snapshot)
    moves = []
    for client_id, assigned in sorted(plan.assignment.items()):
        for task in assigned.active:
            if before.get(task) != client_id:
                moves.append((task, before.get(task), client_id))
    return sorted(moves)


def warmups(plan: Plan) -> list[tuple[str, str]]:
    """(task, client) for every warmup in the plan's assignment."""
    return sorted((t, c) for c, a in plan.assignment.items() for t in a.warmup)


def actives_of(mapping: Mapping[str, ClientAssignment] | Mapping[str, ClientTarget]) -> dict[str, set[str]]:
    """Client id -> its set of actives, for an assignment or a target."""
    return {c: set(a.active) for c, a in mapping.items()}


def standbys_of(mapping: Mapping[str, ClientAssignment] | Mapping[str, ClientTarget]) -> dict[str, set[str]]:
    """Client id -> its set of standbys, for an assignment or a target."""
    return {c: set(a.standby) for c, a in mapping.items()}


def _holders(
    mapping: Mapping[str, ClientAssignment] | Mapping[str, ClientTarget],
    role: Callable[[ClientAssignment | ClientTarget], list[str]],
) -> dict[str, list[str]]:
    held: dict[str, list[str]] = {}
    for client_id in sorted(mapping):
        for task in role(mapping[client_id]):
            held.setdefault(task, []).append(client_id)
    return held


def _active(a: ClientAssignment | ClientTarget) -> list[str]:
    return a.active


def _standby(a: ClientAssignment | ClientTarget) -> list[str]:
    return a.standby


def _warmup(a: ClientAssignment | ClientTarget) -> list[str]:
    return a.warmup if isinstance(a, ClientAssignment) else []


def _copies(a: ClientAssignment | ClientTarget) -> list[str]:
    return [*a.active, *a.standby, *_warmup(a)]


# --------------------------------------------------------------------------------------------------------
# The oracle
# --------------------------------------------------------------------------------------------------------


class _Context:
    """Indexes shared by the rule checks, computed once per (snapshot, plan)."""

    def __init__(self, snapshot: Snapshot, plan: Plan) -> None:
        self.snapshot = snapshot
        self.plan = plan
        self.tasks = {t.id: t for t in snapshot.tasks}
        self.clients = {c.id: c for c in snapshot.clients}
        self.non_leaving = [c for c in snapshot.clients if not is_leaving(c)]
        self.non_leaving_ids = {c.id for c in self.non_leaving}
        self.owner = current_active(snapshot)
        self.a_active = _holders(plan.assignment, _active)
        self.a_standby = _holders(plan.assignment, _standby)
        self.a_warmup = _holders(plan.assignment, _warmup)
        self.t_active = _holders(plan.target, _active)
        self.t_standby = _holders(plan.target, _standby)

    def rank(self, client_id: str, task_id: str) -> int:
        return rank(self.snapshot, self.clients[client_id], self.tasks[task_id])

    def unique(self, held: Mapping[str, list[str]], task_id: str) -> str | None:
        owners = held.get(task_id, [])
        return owners[0] if len(owners) == 1 else None


def _check_r1(ctx: _Context) -> list[str]:
    problems = []
    for name, mapping in (("assignment", ctx.plan.assignment), ("target", ctx.plan.target)):
        for client_id in sorted(set(mapping) - set(ctx.clients)):
            problems.append(f"R1: {name} names client {client_id!r}, which is not in the snapshot")
        for client_id, held in sorted(mapping.items()):
            copies = _copies(held)
            for task in sorted(set(copies) - set(ctx.tasks)):
                problems.append(f"R1: {name} gives {client_id} task {task!r}, which is not in the snapshot")
    for client_id in sorted(set(ctx.clients) - set(ctx.plan.assignment)):
        problems.append(f"R1: client {client_id} is missing from assignment (every client must appear)")
    for task_id in sorted(ctx.tasks):
        for name, held in (("assignment", ctx.a_active), ("target", ctx.t_active)):
            owners = held.get(task_id, [])
            if len(owners) != 1:
                problems.append(f"R1: task {task_id} has {len(owners)} active clients in {name}: {owners}")
    return problems


def _check_r2(ctx: _Context) -> list[str]:
    problems = []
    for name, mapping in (("assignment", ctx.plan.assignment), ("target", ctx.plan.target)):
        for client_id, held in sorted(mapping.items()):
            copies = _copies(held)
            seen: set[str] = set()
            for task in copies:
                if task in seen:
                    problems.append(f"R2: {client_id} holds more than one copy of {task} in {name}")
                seen.add(task)
    return problems


def _check_r3(ctx: _Context) -> list[str]:
    problems = []
    for task in ctx.snapshot.tasks:
        active = ctx.unique(ctx.a_active, task.id)
        if not task.stateful or active is None or active not in ctx.clients:
            continue
        candidates = active_candidates(ctx.snapshot, task, ctx.owner)
        if not candidates:
            continue  # only possible when every client is leaving: rejected as invalid input upstream
        ranks = {c.id: ctx.rank(c.id, task.id) for c in candidates}
        if active not in ranks:
            problems.append(
                f"R3: task {task.id} is active on {active}, which may not hold it "
                f"(leaving and not its unexpired current owner); candidates {sorted(ranks)}"
            )
            continue
        best = min(ranks.values())
        if ranks[active] != best:
            better = sorted(c for c, r in ranks.items() if r == best)
            problems.append(
                f"R3: task {task.id} is active on {active} (rank {ranks[active]}) but {better} "
                f"rank {best}: actives go to a caught-up client, else to the most caught-up one"
            )
    return problems


def _check_r4(ctx: _Context) -> list[str]:
    problems = []
    wanted = ctx.snapshot.config.num_standbys
    for task in ctx.snapshot.tasks:
        standbys = ctx.a_standby.get(task.id, [])
        if not task.stateful:
            if standbys or ctx.a_warmup.get(task.id) or ctx.t_standby.get(task.id):
                problems.append(f"R4: stateless task {task.id} has standby or warmup copies")
            continue
        active = ctx.unique(ctx.a_active, task.id)
        if active is not None:
            k = len(ctx.non_leaving_ids - {active})
            if len(standbys) != min(wanted, k):
                problems.append(
                    f"R4: task {task.id} has {len(standbys)} standbys {standbys} in assignment; "
                    f"expected min(numStandbys={wanted}, {k} other non-leaving clients)"
                )
            for s in standbys:
                if s == active:
                    problems.append(f"R4: task {task.id} has its standby on its active's client {s}")
                if s in ctx.clients and is_leaving(ctx.clients[s]):
                    problems.append(f"R4: task {task.id} has a standby on leaving client {s}")
            chosen = [s for s in standbys if s in ctx.non_leaving_ids and s != active]
            others = [
                c.id for c in ctx.non_leaving if c.id != active and c.id not in standbys
            ]  # warmup holders are eligible too: a warmup never counts as a standby
            for s in chosen:
                for o in others:
                    if ctx.rank(s, task.id) > ctx.rank(o, task.id):
                        problems.append(
                            f"R4: task {task.id} has a standby on {s} (rank {ctx.rank(s, task.id)}) while "
                            f"{o} is more caught up (rank {ctx.rank(o, task.id)}) and holds no standby"
                        )
        target_active = ctx.unique(ctx.t_active, task.id)
        target_standbys = ctx.t_standby.get(task.id, [])
        expected = max(0, min(wanted, len(ctx.non_leaving) - 1))
        if len(target_standbys) != expected:
            problems.append(
                f"R4: task {task.id} has {len(target_standbys)} standbys {target_standbys} in target; "
                f"expected min(numStandbys={wanted}, {len(ctx.non_leaving)} non-leaving clients - 1)"
            )
        for s in target_standbys:
            if s == target_active:
                problems.append(f"R4: task {task.id} has a target standby on its target active's client {s}")
            if s not in ctx.non_leaving_ids:
                problems.append(f"R4: task {task.id} has a target standby on {s}, leaving or unknown")
    return problems


def _check_r5(ctx: _Context) -> list[str]:
    problems = []
    total = sum(len(a.warmup) for a in ctx.plan.assignment.values())
    limit = ctx.snapshot.config.max_warmup_replicas
    if total > limit:
        problems.append(f"R5: {total} warmups in assignment; at most maxWarmupReplicas={limit} allowed")
    for client_id, held in sorted(ctx.plan.assignment.items()):
        for task_id in held.warmup:
            task = ctx.tasks.get(task_id)
            if task is None:
                continue
            if not task.stateful:
                problems.append(f"R5: warmup of stateless task {task_id} on {client_id}")
            if client_id not in ctx.non_leaving_ids:
                problems.append(f"R5: warmup of {task_id} on {client_id}, which is leaving or unknown")
            target = ctx.plan.target.get(client_id, ClientTarget())
            if task_id not in target.active and task_id not in target.standby:
                problems.append(
                    f"R5: warmup of {task_id} on {client_id}, but the target gives {client_id} no copy "
                    f"of {task_id}: warmups only move a task toward the target"
                )
            if task_id in held.active or task_id in held.standby:
                problems.append(f"R5: warmup of {task_id} on {client_id}, which already holds a copy of it")
    return problems


def _check_r6(ctx: _Context) -> list[str]:
    problems = []
    for client in ctx.snapshot.clients:
        if not is_leaving(client):
            continue
        held = ctx.plan.assignment.get(client.id, ClientAssignment())
        if held.standby or held.warmup:
            problems.append(
                f"R6: leaving client {client.id} holds standby {held.standby} / warmup {held.warmup}"
            )
        new = sorted(set(held.active) - set(client.active))
        if new:
            problems.append(f"R6: leaving client {client.id} gets actives it did not hold: {new}")
        if timeout_expired(ctx.snapshot, client) and held.active:
            problems.append(
                f"R6: leaving client {client.id} timed out but still holds actives {sorted(held.active)}"
            )
        for task_id in sorted(set(held.active) & set(client.active)):
            task = ctx.tasks.get(task_id)
            if task is None:
                continue
            ready = sorted(c.id for c in ctx.non_leaving if ctx.rank(c.id, task_id) == 0)
            if ready:
                problems.append(
                    f"R6: task {task_id} stays active on leaving client {client.id} although {ready} "
                    "(not leaving) is caught up"
                )
        target = ctx.plan.target.get(client.id, ClientTarget())
        if target.active or target.standby:
            problems.append(f"R6: target uses leaving client {client.id}: {target.active} / {target.standby}")
    return problems


def _spread(loads: Mapping[str, float]) -> float:
    return max(loads.values()) - min(loads.values()) if loads else 0.0


def _per_capacity(ctx: _Context, counts: Mapping[str, int]) -> dict[str, float]:
    return {c.id: counts.get(c.id, 0) / c.capacity for c in ctx.non_leaving}


def balance_violations(snapshot: Snapshot, plan: Plan) -> list[str]:
    """R9 alone: is the plan's target balanced? (Also part of `check_plan`.)"""
    ctx = _Context(snapshot, plan)
    if not ctx.non_leaving:
        return []
    problems = []
    # balanceFactor (1 unless set) is how many tasks per unit of capacity loads may differ by.
    tolerance = snapshot.config.balance_factor
    target = {c.id: plan.target.get(c.id, ClientTarget()) for c in ctx.non_leaving}
    if snapshot.config.balance_by == BalanceBy.WEIGHT:
        return _weight_violations(ctx, target)
    actives = _per_capacity(ctx, {c: len(t.active) for c, t in target.items()})
    if _spread(actives) > tolerance + EPSILON:
        problems.append(f"R9: target actives per unit of capacity differ by more than {tolerance}: {actives}")
    stateful = {t.id for t in snapshot.tasks if t.stateful}
    stateful_actives = _per_capacity(ctx, {c: len(set(t.active) & stateful) for c, t in target.items()})
    if _spread(stateful_actives) > tolerance + EPSILON:
        problems.append(
            f"R9: target stateful actives per unit of capacity differ by more than {tolerance}: "
            f"{stateful_actives}"
        )
    capacities = {c.capacity for c in ctx.non_leaving}
    if len(capacities) == 1 and len(ctx.non_leaving) > snapshot.config.num_standbys:
        total = _per_capacity(ctx, {c: len(t.active) + len(t.standby) for c, t in target.items()})
        if _spread(total) > tolerance + EPSILON:
            problems.append(
                f"R9: target total load (actives + standbys) differs by more than {tolerance}: {total}"
            )
    # KIP-441's balance includes each subtopology's spread; only min_traffic may trade it for traffic.
    if snapshot.config.rack_aware.strategy != RackStrategy.MIN_TRAFFIC:
        problems.extend(_subtopology_violations(ctx, target))
    return problems


def _weight_violations(ctx: _Context, target: Mapping[str, ClientTarget]) -> list[str]:
    """balanceBy=weight: task weights per unit of capacity within the largest single weight. (Standbys are
    balanced by count where their exclusions allow; with weight-placed actives they often cannot be.)"""
    weight = {t.id: t.weight for t in ctx.snapshot.tasks}
    heaviest = max(weight.values(), default=0.0)
    loads = {c.id: sum(weight[t] for t in target[c.id].active) / c.capacity for c in ctx.non_leaving}
    problems = []
    if _spread(loads) > heaviest + EPSILON:
        problems.append(f"R9: target weight per unit of capacity differs by more than {heaviest}: {loads}")
    return problems


def subtopology_bounds(size: int, capacity: int, total_capacity: int) -> tuple[int, int]:
    """floor and ceil of size * capacity / total_capacity, in exact integer arithmetic."""
    return (size * capacity) // total_capacity, -((-size * capacity) // total_capacity)


def _subtopology_violations(ctx: _Context, target: Mapping[str, ClientTarget]) -> list[str]:
    problems = []
    total_capacity = sum(c.capacity for c in ctx.non_leaving)
    members: dict[str, set[str]] = {}
    for task in ctx.snapshot.tasks:
        members.setdefault(task.subtopology, set()).add(task.id)
    tolerance = ctx.snapshot.config.balance_factor
    for sub, tasks in sorted(members.items()):
        if tolerance > 1:
            per_unit = _per_capacity(
                ctx, {c.id: len(set(target[c.id].active) & tasks) for c in ctx.non_leaving}
            )
            if _spread(per_unit) > tolerance + EPSILON:
                problems.append(
                    f"R9: subtopology {sub} differs by more than {tolerance} per unit: {per_unit}"
                )
            continue
        for client in ctx.non_leaving:
            count = len(set(target[client.id].active) & tasks)
            low, high = subtopology_bounds(len(tasks), client.capacity, total_capacity)
            if not low <= count <= high:
                problems.append(
                    f"R9: subtopology {sub} ({len(tasks)} tasks) has {count} target actives on {client.id} "
                    f"(capacity {client.capacity} of {total_capacity}); expected between {low} and {high}"
                )
    return problems


def same_placement(plan: Plan) -> bool:
    """Whether the assignment holds exactly the target's actives and standbys on every client."""
    empty = ClientTarget()
    for client_id in set(plan.assignment) | set(plan.target):
        assigned = plan.assignment.get(client_id, ClientAssignment())
        target = plan.target.get(client_id, empty)
        if set(assigned.active) != set(target.active) or set(assigned.standby) != set(target.standby):
            return False
    return True


def _check_outcome(ctx: _Context) -> list[str]:
    problems = []
    plan = ctx.plan
    has_warmups = any(a.warmup for a in plan.assignment.values())
    expected = same_placement(plan) and not has_warmups
    if plan.stable != expected:
        relation = "equals" if same_placement(plan) else "differs from"
        problems.append(
            f"STABLE: stable={plan.stable} but the assignment {relation} the target and there are "
            f"{'' if has_warmups else 'no '}warmups"
        )
    if plan.stable and plan.followup is not None:
        problems.append(f"FOLLOWUP: a stable plan asks for a followup: {plan.followup}")
    if not plan.stable:
        if plan.followup is None:
            problems.append("FOLLOWUP: a plan that is not stable has no followup (nobody would re-plan)")
        else:
            if not plan.followup.reason.strip():
                problems.append("FOLLOWUP: the followup has an empty reason")
            if not plan.followup.probe_after_seconds > 0:
                problems.append(f"FOLLOWUP: probeAfterSeconds={plan.followup.probe_after_seconds} is not > 0")
    missing = sorted(set(ctx.tasks) - set(plan.explain))
    extra = sorted(set(plan.explain) - set(ctx.tasks))
    if missing:
        problems.append(f"EXPLAIN: no explanation for tasks {missing}")
    if extra:
        problems.append(f"EXPLAIN: explanations for unknown tasks {extra}")
    for task_id, text in sorted(plan.explain.items()):
        if not text.strip() or "\n" in text.strip():
            problems.append(f"EXPLAIN: explanation of {task_id} is not one non-empty line: {text!r}")
    return problems


def check_plan(snapshot: Snapshot, plan: Plan) -> list[str]:
    """Every rule of Contract 1 that `plan` violates for `snapshot`, one message each (empty when valid).

    R1 one active per task, every client listed; R2 one copy per client; R3 actives on the most caught-up
    candidate; R4 standby count and placement; R5 warmups; R6 leaving clients; R9 target balance; plus the
    consistency of `stable`, `followup` and `explain`. See the module docstring for the message format.
    """
    ctx = _Context(snapshot, plan)
    return [
        *_check_r1(ctx),
        *_check_r2(ctx),
        *_check_r3(ctx),
        *_check_r4(ctx),
        *_check_r5(ctx),
        *_check_r6(ctx),
        *balance_violations(snapshot, plan),
        *_check_outcome(ctx),
    ]


def assert_valid(snapshot: Snapshot, plan: Plan, context: str = "") -> None:
    """Fail with every violated rule and the snapshot's JSON, so the case can be replayed."""
    problems = check_plan(snapshot, plan)
    if problems:
        lines = "\n  ".join(problems)
        raise AssertionError(f"{context}plan violates the contract:\n  {lines}\nsnapshot: {dump(snapshot)}")


# --------------------------------------------------------------------------------------------------------
# Driving scenarios
# --------------------------------------------------------------------------------------------------------


def convergence_bound(snapshot: Snapshot) -> int:
    """B = ceil(T * (1 + numStandbys) / maxWarmupReplicas) + 3 rounds (see test_convergence)."""
    config = snapshot.config
    copies = len(snapshot.tasks) * (1 + config.num_standbys)
    return math.ceil(copies / config.max_warmup_replicas) + 3


def run_until_stable(
    snapshot: Snapshot, max_rounds: int, seconds: float = 60.0, first: Plan | None = None
) -> list[tuple[Snapshot, Plan]]:
    """Plan, check, publish with every copy caught up, repeat until a plan is stable.

    Returns the (snapshot, plan) of every round, the stable one last; fails if a plan breaks a rule or no
    plan is stable within `max_rounds` plans (the first plan counts as round 1).
    """
    trail: list[tuple[Snapshot, Plan]] = []
    plan = first if first is not None else run_planner(snapshot)
    for round_ in range(1, max_rounds + 1):
        assert_valid(snapshot, plan, f"round {round_}: ")
        trail.append((snapshot, plan))
        if plan.stable:
            return trail
        snapshot = advance(snapshot, plan, caught_up=True, seconds=seconds)
        plan = run_planner(snapshot)
    raise AssertionError(
        f"not stable after {max_rounds} rounds; last followup {trail[-1][1].followup}; "
        f"first snapshot: {dump(trail[0][0])}"
    )


def comparable(plan: Plan) -> dict[str, Any]:
    """The plan without the parts that describe the step just taken (moved actives, explanations)."""
    data = plan.model_dump(by_alias=True, mode="json")
    data["stats"].pop("movedActives", None)
    data.pop("explain", None)
    return data


def assert_fixed_point(snapshot: Snapshot, plan: Plan, seconds: float = 60.0) -> None:
    """Rule 8: a stable plan fed back is returned unchanged.

    Feeding back means publishing the plan's assignment with every held copy at lag 0. The first re-plan
    must keep everything but the description of the step (movedActives, explain may now say "kept"); the
    next one, from an input that differs only in `now`, must be byte-identical to it.
    """
    assert plan.stable, "only a stable plan is a fixed point"
    again_snapshot = advance(snapshot, plan, caught_up=True, seconds=seconds)
    again = run_planner(again_snapshot)
    assert comparable(again) == comparable(plan), (
        f"stable plan not returned unchanged\nbefore: {comparable(plan)}\nafter:  {comparable(again)}\n"
        f"snapshot fed back: {dump(again_snapshot)}"
    )
    assert again.stats.moved_actives == 0, f"fed-back stable plan moves actives: {again.stats}"
    third_snapshot = advance(again_snapshot, again, caught_up=True, seconds=seconds)
    third = run_planner(third_snapshot)
    assert third.model_dump_json(by_alias=True) == again.model_dump_json(by_alias=True), (
        f"re-planning an unchanged cluster changed the plan\nsnapshot: {dump(third_snapshot)}"
    )
