"""The target: the balanced, rack-optimal assignment that a plan converges to (KIP-441 + KIP-925).

Two solves. First the stateful actives, balanced per unit of capacity (and per subtopology with
`balance_subtopology`). Then the standbys and the stateless actives together, so that all actives stay
balanced and so does the total load (actives plus standbys): solved apart, stateless tasks placed before the
standbys can leave a client no room that the standbys' exclusions could fill. Only clients that are not
leaving take part. Among balanced placements each solve minimises cross-rack traffic plus the cost of moving
away from the clients that hold a task today.

Costs, in units before scaling: an active costs 3 x trafficCost per input partition read across racks, plus
nonOverlapCost x 0 on its current active client, x 1 on a client with state for it (a standby, a warmup, or a
caught-up copy), x 2 on a client whose state for it is behind but by at most half its changelog (a pod back
from an outage with its volume: `PARTLY_WARM`), x 3 elsewhere (KIP-925's non-overlap cost, so the traffic to
non-overlap ratio is the one configured). Warm state costs a third of a cold move: using two warm copies
beats keeping one active and restoring another from scratch (KIP-441's scaling-in), and in-progress warmups
stay in the target and so makes the plan converge. Every unit is multiplied by (copies + 1) and one more is
added off the current holder, so that among equally good targets the current assignment always wins: a
stable plan fed back is returned unchanged.
"""

from __future__ import annotations

import heapq
from dataclasses import dataclass, replace

import numpy as np

from smoothscale.assignor.cluster import (
    NO_CLIENT,
    UNKNOWN_RACK,
    BoolArray,
    Cluster,
    FloatArray,
    IntArray,
    caught_up_mask,
    flatten,
)
from smoothscale.assignor.flow.problem import NO_EXCLUSION, UNLIMITED, Bounds, PlacementProblem
from smoothscale.assignor.flow.solve import place
from smoothscale.assignor.models import BalanceBy, RackStrategy

COLD = 3  # warmth of a client without state for the task, in non-overlap units
PARTLY_WARM = 2
"""Warmth of a client whose state for the task is behind, but by at most half the task's changelog: a target
that gives the pods of a zone back from an outage their own tasks restores minutes of input, not whole
stores (all of them counted cold, the target took their own tasks no more often than any others)."""


@dataclass(frozen=True, slots=True)
class Holdings:
    """Who holds which copy now: the published assignment the target is sticky to."""

    active: IntArray  # per task: client position or NO_CLIENT
    standby: list[list[int]]
    warmup: list[list[int]]


@dataclass(frozen=True, slots=True)
class Target:
    active: IntArray  # per task: client position
    standby: list[list[int]]  # per task: client positions, ascending


def current_holdings(cluster: Cluster) -> Holdings:
    return Holdings(cluster.current_active, cluster.current_standby, cluster.current_warmup)


def proportional_bounds(total: int, capacity: IntArray) -> tuple[IntArray, IntArray]:
    """floor and ceil of each client's share of `total`, proportional to its capacity."""
    weighted = total * capacity
    cap_sum = int(capacity.sum())
    return weighted // cap_sum, -(-weighted // cap_sum)


def tolerant_bounds(total: int, capacity: IntArray, held: IntArray, factor: int) -> tuple[IntArray, IntArray]:
    """Bounds within which loads per unit of capacity differ by at most `factor` (balanceFactor).

    Every client's load per unit lies in one window [m, m + factor] that contains the average; of the
    windows that do, the one the current loads fit best is taken, so that a cluster already balanced within
    the tolerance is left alone: no move whose only purpose is to improve balance within it.
    """
    cap_sum = int(capacity.sum())
    best: tuple[int, int, int] | None = None
    for low in range(max(0, -(-total // cap_sum) - factor), total // cap_sum + 1):
        lower, upper = low * capacity, (low + factor) * capacity
        misfit = int(np.maximum(held - upper, 0).sum() + np.maximum(lower - held, 0).sum())
        centred = abs(2 * low + factor - 2 * total // cap_sum)
        if best is None or (misfit, centred) < best[:2]:
            best = (misfit, centred, low)
    assert best is not None, "the average always lies in some window"
    low = best[2]
    return low * capacity, (low + factor) * capacity


class _Costs:
    """Integer costs of putting a copy of a task on a client, shared by the three solves.

    The holdings are flattened to (task, client) arrays once, here, not once per solve.
    """

    def __init__(self, cluster: Cluster, holdings: Holdings) -> None:
        self.cluster = cluster
        self.holdings = holdings
        self.non_overlap = cluster.config.rack_aware.non_overlap_cost
        # Warmth of a client with no relation to the task: 1 if everyone counts as caught up, else cold.
        self.generic = np.where(cluster.stateful & cluster.everyone_caught_up_mask(), 1, COLD).astype(
            np.int64
        )
        self.standby_entries = flatten(holdings.standby)
        self.warmup_entries = flatten(holdings.warmup)

    def warm(self, tasks: IntArray, *, standby: bool) -> tuple[IntArray, IntArray, IntArray]:
        """(item, client, warmth) for clients warmer than a generic one, items indexing `tasks`.

        Seen from an active: 0 on the current active client, 1 with state (standby, warmup, caught up),
        `PARTLY_WARM` with state behind by at most half the changelog.
        Seen from a standby: 0 on a current standby client, 1 on the active client or with state.
        """
        cluster, holdings = self.cluster, self.holdings
        lag_task, lag_client, lag_value = cluster.lag_entries
        stateful = cluster.stateful[lag_task] & (self.generic[lag_task] > 1)
        within = caught_up_mask(lag_value, cluster.config.acceptable_recovery_lag)
        caught = within & stateful
        partly = ~within & stateful & (2 * lag_value <= cluster.changelog[lag_task])
        standby_task, standby_client = self.standby_entries
        warmup_task, warmup_client = self.warmup_entries
        owned = np.flatnonzero(holdings.active != NO_CLIENT)
        stateful_standby = cluster.stateful[standby_task]
        parts = [
            (lag_task[caught], lag_client[caught], 1),
            (lag_task[partly], lag_client[partly], PARTLY_WARM),
            (warmup_task, warmup_client, 1),
            (standby_task[stateful_standby], standby_client[stateful_standby], 0 if standby else 1),
            (owned, holdings.active[owned], 1 if standby else 0),
        ]
        task = np.concatenate([p[0] for p in parts])
        client = np.concatenate([p[1] for p in parts])
        warmth = np.concatenate([np.full(len(p[0]), p[2], dtype=np.int64) for p in parts])
        item_of = np.full(cluster.n_tasks, -1, dtype=np.int64)
        item_of[tasks] = np.arange(len(tasks))
        keep = item_of[task] >= 0
        # Sorted by (item, client, warmth) as one packed key (a warmth is at most COLD), the warmest first.
        pair = item_of[task[keep]] * cluster.n_clients + client[keep]
        packed = np.sort(pair * (COLD + 1) + warmth[keep])
        pair, warmth = np.divmod(packed, COLD + 1)
        first = np.ones(len(pair), dtype=np.bool_)
        first[1:] = pair[1:] != pair[:-1]
        item, client = np.divmod(pair[first], cluster.n_clients)
        return item, client, warmth[first]


@dataclass(frozen=True, slots=True)
class _Context:
    """The clients a target may use (those not leaving) and their rack layout, in local positions."""

    cluster: Cluster
    holdings: Holdings
    costs: _Costs
    clients: IntArray  # global positions
    local: IntArray  # global position -> local position, or -1
    racks: IntArray  # global rack index of each local rack
    client_rack: IntArray  # local rack of each local client

    @staticmethod
    def of(cluster: Cluster, holdings: Holdings) -> _Context:
        clients = cluster.non_leaving()
        local = np.full(cluster.n_clients, -1, dtype=np.int64)
        local[clients] = np.arange(len(clients))
        racks = np.unique(cluster.client_rack[clients])
        rack_local = np.full(len(cluster.racks), -1, dtype=np.int64)
        rack_local[racks] = np.arange(len(racks))
        costs = _Costs(cluster, holdings)
        return _Context(
            cluster, holdings, costs, clients, local, racks, rack_local[cluster.client_rack[clients]]
        )

    def rack_known(self) -> BoolArray:
        """Per local rack: whether it is a real zone (not the pods whose zone is unknown)."""
        known: BoolArray = np.array([self.cluster.racks[r] != UNKNOWN_RACK for r in self.racks.tolist()])
        return known

    def bounds(self, total: int, held: IntArray) -> tuple[IntArray, IntArray]:
        """Per-client count bounds for `total` copies; `held` is what each client holds of them now."""
        capacity = self.cluster.capacity[self.clients]
        factor = self.cluster.config.balance_factor
        if factor == 1:
            return proportional_bounds(total, capacity)
        return tolerant_bounds(total, capacity, held, factor)

    def held(self, tasks: IntArray, *, standby: bool = False) -> IntArray:
        """How many of `tasks` each client holds as active (and, with `standby`, as standby) now."""
        owners = self.holdings.active[tasks]
        counts = np.bincount(self.local[owners[owners != NO_CLIENT]] + 1, minlength=len(self.clients) + 1)
        if standby:
            standby_task, standby_client = self.costs.standby_entries
            among = np.zeros(self.cluster.n_tasks, dtype=np.bool_)
            among[tasks] = True
            held = self.local[standby_client[among[standby_task]]]
            counts += np.bincount(held + 1, minlength=len(self.clients) + 1)
        return counts[1:]


@dataclass(frozen=True, slots=True)
class _Part:
    """One kind of copy (stateful actives, stateless actives, standbys) as arrays of a placement problem.

    Costs are in units; the merge scales them and adds the tie-break (1 off the current holder).
    """

    tasks: IntArray
    supply: IntArray
    item_group: IntArray
    group_lower: IntArray  # (groups, clients)
    group_upper: IntArray
    entry_item: IntArray
    entry_rack: IntArray
    entry_exclude: IntArray
    entry_capacity: IntArray
    entry_units: IntArray
    direct_item: IntArray
    direct_client: IntArray
    direct_units: IntArray
    direct_tie: IntArray

    @property
    def n_groups(self) -> int:
        return len(self.group_lower)


def _active_part(ctx: _Context, tasks: IntArray) -> _Part:
    """Actives of `tasks`: traffic plus stickiness; each subtopology balanced on its own (KIP-441's balance)
    unless `min_traffic` trades that for less cross-rack traffic (KIP-925 4.B.I)."""
    cluster = ctx.cluster
    costs = ctx.costs
    traffic3 = COLD * cluster.traffic_cost
    n_items, n_racks, n_clients = len(tasks), len(ctx.racks), len(ctx.clients)
    if cluster.config.rack_aware.strategy is not RackStrategy.MIN_TRAFFIC:
        _, item_group = np.unique(cluster.subtopology[tasks], return_inverse=True)
        pairs = [
            ctx.bounds(int(size), ctx.held(tasks[item_group == group]))
            for group, size in enumerate(np.bincount(item_group))
        ]
        group_lower, group_upper = np.stack([p[0] for p in pairs]), np.stack([p[1] for p in pairs])
    else:
        item_group = np.zeros(n_items, dtype=np.int64)
        group_lower = np.zeros((1, n_clients), dtype=np.int64)
        group_upper = np.full((1, n_clients), UNLIMITED, dtype=np.int64)
    missing = cluster.missing_partitions[tasks][:, ctx.racks]  # (items, racks)
    entry_units = traffic3 * missing + costs.non_overlap * costs.generic[tasks][:, None]
    item, client, warmth = costs.warm(tasks, standby=False)
    keep = ctx.local[client] >= 0
    item, client, warmth = item[keep], client[keep], warmth[keep]
    rack_cost = traffic3 * cluster.missing_partitions[tasks[item], cluster.client_rack[client]]
    return _Part(
        tasks=tasks,
        supply=np.ones(n_items, dtype=np.int64),
        item_group=item_group.astype(np.int64),
        group_lower=group_lower,
        group_upper=group_upper,
        entry_item=np.repeat(np.arange(n_items, dtype=np.int64), n_racks),
        entry_rack=np.tile(np.arange(n_racks, dtype=np.int64), n_items),
        entry_exclude=np.full(n_items * n_racks, NO_EXCLUSION, dtype=np.int64),
        entry_capacity=np.ones(n_items * n_racks, dtype=np.int64),
        entry_units=entry_units.reshape(-1),
        direct_item=item,
        direct_client=ctx.local[client],
        direct_units=rack_cost + costs.non_overlap * warmth,
        direct_tie=(warmth != 0).astype(np.int64),
    )


def _standby_part(ctx: _Context, tasks: IntArray, active: IntArray, wanted: int) -> _Part:
    """Standbys: never with their active, other racks first (reliability before stickiness, KIP-925 C.I)."""
    cluster = ctx.cluster
    costs = ctx.costs
    n_items, n_racks, n_clients = len(tasks), len(ctx.racks), len(ctx.clients)
    spread = COLD * costs.non_overlap + 1  # outweighs any difference of stickiness
    same_rack, second_in_rack = 2 * spread, spread
    owner = active[tasks]
    owner_rack = ctx.client_rack[ctx.local[owner]]
    tiers = [(1, 0)] + ([(wanted - 1, second_in_rack)] if wanted > 1 else [])
    entry_item = np.repeat(np.arange(n_items, dtype=np.int64), n_racks)
    entry_rack = np.tile(np.arange(n_racks, dtype=np.int64), n_items)
    own = entry_rack == owner_rack[entry_item]
    exclude = np.where(own, ctx.local[owner][entry_item], NO_EXCLUSION)
    known = ctx.rack_known()  # per local rack
    rack_cost = _spread_cost(own, known[entry_rack] & known[owner_rack[entry_item]], same_rack, spread)
    base = costs.non_overlap * costs.generic[tasks][entry_item] + rack_cost
    item, client, warmth = costs.warm(tasks, standby=True)
    keep = (ctx.local[client] >= 0) & (client != owner[item])
    item, client, warmth = item[keep], client[keep], warmth[keep]
    with_owner = cluster.client_rack[client] == cluster.client_rack[owner[item]]
    both_known = known[ctx.client_rack[ctx.local[client]]] & known[ctx.client_rack[ctx.local[owner[item]]]]
    return _Part(
        tasks=tasks,
        supply=np.full(n_items, wanted, dtype=np.int64),
        item_group=np.zeros(n_items, dtype=np.int64),
        group_lower=np.zeros((1, n_clients), dtype=np.int64),
        group_upper=np.full((1, n_clients), UNLIMITED, dtype=np.int64),
        entry_item=np.tile(entry_item, len(tiers)),
        entry_rack=np.tile(entry_rack, len(tiers)),
        entry_exclude=np.tile(exclude, len(tiers)),
        entry_capacity=np.concatenate([np.full(len(entry_item), cap) for cap, _ in tiers]),
        entry_units=np.concatenate([base + extra for _, extra in tiers]),
        direct_item=item,
        direct_client=ctx.local[client],
        direct_units=costs.non_overlap * warmth + _spread_cost(with_owner, both_known, same_rack, spread),
        direct_tie=(warmth != 0).astype(np.int64),
    )


def _spread_cost(same: BoolArray, known: BoolArray, same_rack: int, unknown: int) -> IntArray:
    """A standby's rack cost: nothing in another rack, `same_rack` beside its active; where either rack is
    unknown, in between: not certainly another rack, not certainly the same."""
    cost: IntArray = np.where(known, np.where(same, same_rack, 0), unknown)
    return cost


def _solve(ctx: _Context, parts: list[_Part], bounds: Bounds) -> list[list[list[int]]]:
    """Merge the parts into one placement problem (part k is class k) and solve it."""
    scale = int(sum(int(p.supply.sum()) for p in parts)) + 1
    item_offsets = np.cumsum([0] + [len(p.tasks) for p in parts])
    group_offsets = np.cumsum([0] + [p.n_groups for p in parts])
    grouped = any(bool(np.any(p.group_lower > 0)) or bool(np.any(p.group_upper < UNLIMITED)) for p in parts)

    def cat(name: str, shift: IntArray | None = None) -> IntArray:
        arrays = [getattr(p, name) + (0 if shift is None else shift[k]) for k, p in enumerate(parts)]
        return np.concatenate(arrays).astype(np.int64)

    problem = PlacementProblem(
        client_rack=ctx.client_rack,
        n_racks=len(ctx.racks),
        supply=cat("supply"),
        item_group=cat("item_group", group_offsets),
        n_groups=int(group_offsets[-1]),
        entry_item=cat("entry_item", item_offsets),
        entry_rack=cat("entry_rack"),
        entry_exclude=cat("entry_exclude"),
        entry_capacity=cat("entry_capacity"),
        entry_cost=cat("entry_units") * scale + 1,
        direct_item=cat("direct_item", item_offsets),
        direct_client=cat("direct_client"),
        direct_cost=cat("direct_units") * scale + cat("direct_tie"),
        group_class=np.repeat(np.arange(len(parts)), [p.n_groups for p in parts]),
    )
    if grouped:
        bounds = Bounds(
            bounds.client_lower,
            bounds.client_upper,
            np.concatenate([p.group_lower for p in parts]),
            np.concatenate([p.group_upper for p in parts]),
            bounds.class_lower,
            bounds.class_upper,
        )
    placed = place(problem, bounds)
    return [placed[int(item_offsets[k]) : int(item_offsets[k + 1])] for k in range(len(parts))]


def _place_stateful_actives(ctx: _Context, stateful: IntArray, stateless: IntArray) -> IntArray:
    """Stateful actives, solved together with the stateless ones (whose placement is then re-done beside the
    standbys): stateful tasks placed alone can take exactly the slots a subtopology's stateless tasks need."""
    parts = [_active_part(ctx, stateful)]
    bounds = Bounds(*ctx.bounds(len(stateful), ctx.held(stateful)))
    if len(stateless):
        parts.append(_active_part(ctx, stateless))
        n_clients = len(ctx.clients)
        stateful_lower, stateful_upper = bounds.client_lower, bounds.client_upper
        bounds = Bounds(
            *ctx.bounds(len(stateful) + len(stateless), ctx.held(np.concatenate([stateful, stateless]))),
            class_lower=np.stack([stateful_lower, np.zeros(n_clients, dtype=np.int64)]),
            class_upper=np.stack([stateful_upper, np.full(n_clients, UNLIMITED, dtype=np.int64)]),
        )
    placed = _solve(ctx, parts, bounds)[0]
    result: IntArray = ctx.clients[np.array([p[0] for p in placed], dtype=np.int64)]
    return result


def weighted_counts(weights: FloatArray, sizes: IntArray, capacity: IntArray, held: IntArray) -> IntArray:
    """How many tasks of each group (subtopology) each client gets, balancing weight per unit of capacity.

    Heaviest groups first, so that they spread evenly and the light ones fill the gaps; within a group a
    client first keeps the tasks it holds while they fit its share, then each further task goes to the client
    with the most share left per unit of capacity. Like longest-processing-time scheduling, this keeps loads
    per unit within the largest single task weight.
    """
    share = float(np.dot(weights, sizes)) * capacity / capacity.sum()
    assigned = np.zeros(len(capacity))
    counts = np.zeros((len(sizes), len(capacity)), dtype=np.int64)
    for group in sorted(range(len(sizes)), key=lambda g: (-weights[g], g)):
        weight, size = float(weights[group]), int(sizes[group])
        room = np.floor(np.maximum(share - assigned, 0) / weight + 1e-9).astype(np.int64)
        keep = np.minimum(held[group], room)
        if keep.sum() > size:
            keep = np.zeros_like(keep)
        counts[group] = keep
        assigned += keep * weight
        heap = [(-(share[c] - assigned[c]) / capacity[c], c) for c in range(len(capacity))]
        heapq.heapify(heap)
        for _ in range(size - int(keep.sum())):
            _, client = heapq.heappop(heap)
            counts[group, client] += 1
            assigned[client] += weight
            heapq.heappush(heap, (-(share[client] - assigned[client]) / capacity[client], client))
    return counts


def _place_actives_by_weight(ctx: _Context) -> IntArray:
    """balanceBy=weight: every active in one solve, with per-(subtopology, client) counts that balance
    weight; traffic and stickiness still choose which tasks go where."""
    cluster = ctx.cluster
    tasks = np.arange(cluster.n_tasks, dtype=np.int64)
    part = _active_part(ctx, tasks)
    groups, item_group = np.unique(cluster.subtopology, return_inverse=True)
    sizes = np.bincount(item_group, minlength=len(groups))
    weights = np.bincount(item_group, weights=cluster.weight, minlength=len(groups)) / sizes
    held = np.stack([ctx.held(tasks[item_group == g]) for g in range(len(groups))])
    counts = weighted_counts(weights, sizes, cluster.capacity[ctx.clients], held)
    part = replace(part, item_group=item_group.astype(np.int64), group_lower=counts, group_upper=counts)
    per_client = counts.sum(axis=0)
    placed = _solve(ctx, [part], Bounds(per_client, per_client))[0]
    result: IntArray = ctx.clients[np.array([p[0] for p in placed], dtype=np.int64)]
    return result


def compute_target(cluster: Cluster, holdings: Holdings) -> Target:
    """All actives first (so that the stateful ones leave room for a balanced spread of the stateless ones);
    then, the stateful actives fixed, standbys and stateless actives together, so that the actives and the
    total load (actives plus standbys) both come out balanced. With balanceBy=weight the actives balance
    weight instead, and the standbys balance their own count."""
    ctx = _Context.of(cluster, holdings)
    n_clients = len(ctx.clients)
    stateful = np.flatnonzero(cluster.stateful).astype(np.int64)
    stateless = np.flatnonzero(~cluster.stateful).astype(np.int64)
    active = np.full(cluster.n_tasks, NO_CLIENT, dtype=np.int64)
    by_weight = cluster.config.balance_by is BalanceBy.WEIGHT
    if by_weight:
        active = _place_actives_by_weight(ctx)
        stateless = stateless[:0]
    elif len(stateful):
        active[stateful] = _place_stateful_actives(ctx, stateful, stateless)
    taken = np.bincount(ctx.local[active[stateful]], minlength=n_clients)

    wanted = min(cluster.config.num_standbys, n_clients - 1)
    copies = wanted * len(stateful) if wanted > 0 else 0
    parts, classes = [], []
    every_task = np.arange(cluster.n_tasks, dtype=np.int64)
    actives_lower, actives_upper = ctx.bounds(cluster.n_tasks, ctx.held(every_task))
    if copies:
        parts.append(_standby_part(ctx, stateful, active, wanted))
        classes.append((np.zeros(n_clients, dtype=np.int64), np.full(n_clients, UNLIMITED, dtype=np.int64)))
    if len(stateless):
        parts.append(_active_part(ctx, stateless))
        classes.append((np.maximum(actives_lower - taken, 0), np.maximum(actives_upper - taken, 0)))
    standby: list[list[int]] = [[] for _ in range(cluster.n_tasks)]
    if parts:
        if by_weight:
            held_standbys = ctx.held(stateful, standby=True) - ctx.held(stateful)
            bounds = Bounds(*ctx.bounds(copies, held_standbys))
        else:
            load_lower, load_upper = ctx.bounds(cluster.n_tasks + copies, ctx.held(every_task, standby=True))
            bounds = Bounds(
                np.maximum(load_lower - taken, 0),
                np.maximum(load_upper - taken, 0),
                class_lower=np.stack([c[0] for c in classes]),
                class_upper=np.stack([c[1] for c in classes]),
            )
        results = _solve(ctx, parts, bounds)
        if len(stateless):
            active[stateless] = ctx.clients[np.array([p[0] for p in results[-1]], dtype=np.int64)]
        if copies:
            clients: list[int] = ctx.clients.tolist()
            for task, chosen in zip(stateful.tolist(), results[0], strict=True):
                standby[task] = sorted(map(clients.__getitem__, chosen))
    return Target(active, standby)
