"""The target: the balanced, rack-optimal assignment that a plan converges to (KIP-441 + KIP-925).

Three solves, in KIP-925's order: stateful actives, then stateless actives (so that all actives together stay
balanced), then standbys (so that total load, actives plus standbys, stays balanced). Every solve is balanced
per unit of capacity over the clients that are not leaving and, among balanced placements, minimises
cross-rack traffic plus the cost of moving away from the clients that hold a task today.

Costs, in units before scaling: an active costs 2 x trafficCost per input partition read across racks, plus
nonOverlapCost x 0 on its current active client, x 1 on a client with state for it (a standby, a warmup, or a
caught-up copy), x 2 elsewhere: warm state is half-way to "already there", which keeps in-progress warmups in
the target and so makes the plan converge. Every unit is multiplied by (items + 1) and one more is added off
the current holder, so that among equally good targets the current assignment always wins: a stable plan fed
back is returned unchanged.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from smoothscale.assignor.cluster import NO_CLIENT, Cluster, IntArray, flatten
from smoothscale.assignor.flow import NO_EXCLUSION, Bounds, PlacementProblem, place
from smoothscale.assignor.models import RackStrategy


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


class _Costs:
    """Integer costs of putting a copy of a task on a client, shared by the three solves."""

    def __init__(self, cluster: Cluster, holdings: Holdings, n_items: int) -> None:
        self.cluster = cluster
        self.holdings = holdings
        self.scale = n_items + 1
        self.non_overlap = cluster.config.rack_aware.non_overlap_cost
        # Warmth of a client with no relation to the task: 1 if everyone counts as caught up, else 2.
        self.generic = np.where(cluster.stateful & cluster.everyone_caught_up_mask(), 1, 2).astype(np.int64)

    def warm(self, tasks: IntArray, *, standby: bool) -> tuple[IntArray, IntArray, IntArray]:
        """(item, client, warmth) for clients warmer than a generic one, items indexing `tasks`.

        Seen from an active: 0 on the current active client, 1 with state (standby, warmup, caught up).
        Seen from a standby: 0 on a current standby client, 1 on the active client or with state.
        """
        cluster, holdings = self.cluster, self.holdings
        lag_task, lag_client, lag_value = cluster.lag_entries
        caught = (
            (lag_value <= cluster.config.acceptable_recovery_lag)
            & cluster.stateful[lag_task]
            & (self.generic[lag_task] > 1)
        )
        standby_task, standby_client = flatten(holdings.standby)
        warmup_task, warmup_client = flatten(holdings.warmup)
        owned = np.flatnonzero(holdings.active != NO_CLIENT)
        stateful_standby = cluster.stateful[standby_task]
        parts = [
            (lag_task[caught], lag_client[caught], 1),
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
        item, client, warmth = item_of[task[keep]], client[keep], warmth[keep]
        order = np.lexsort((warmth, client, item))
        item, client, warmth = item[order], client[order], warmth[order]
        first = np.ones(len(item), dtype=np.bool_)
        first[1:] = (item[1:] != item[:-1]) | (client[1:] != client[:-1])
        return item[first], client[first], warmth[first]


def _local_index(clients: IntArray, n_clients: int) -> IntArray:
    local = np.full(n_clients, -1, dtype=np.int64)
    local[clients] = np.arange(len(clients))
    return local


def _rack_layout(cluster: Cluster, clients: IntArray) -> tuple[IntArray, IntArray]:
    """Racks (global index) that have eligible clients, and each eligible client's index among them."""
    used = np.unique(cluster.client_rack[clients])
    rack_local = np.full(len(cluster.racks), -1, dtype=np.int64)
    rack_local[used] = np.arange(len(used))
    return used, rack_local[cluster.client_rack[clients]]


def _place_actives(
    cluster: Cluster,
    holdings: Holdings,
    tasks: IntArray,
    clients: IntArray,
    lower: IntArray,
    upper: IntArray,
) -> IntArray:
    """One balanced min-cost solve placing the actives of `tasks` on `clients` (global positions)."""
    if len(tasks) == 0:
        return np.zeros(0, dtype=np.int64)
    costs = _Costs(cluster, holdings, len(tasks))
    traffic2 = 2 * cluster.traffic_cost
    local = _local_index(clients, cluster.n_clients)
    used_racks, client_rack_local = _rack_layout(cluster, clients)
    n_racks, n_items = len(used_racks), len(tasks)

    by_subtopology = cluster.config.rack_aware.strategy is RackStrategy.BALANCE_SUBTOPOLOGY
    item_group = np.zeros(n_items, dtype=np.int64)
    bounds = Bounds(lower, upper)
    if by_subtopology:
        _, item_group = np.unique(cluster.subtopology[tasks], return_inverse=True)
        per_group = np.bincount(item_group)
        capacity = cluster.capacity[clients]
        pairs = [proportional_bounds(int(size), capacity) for size in per_group]
        bounds = Bounds(lower, upper, np.stack([p[0] for p in pairs]), np.stack([p[1] for p in pairs]))

    missing = cluster.missing_partitions[tasks][:, used_racks]  # (items, racks)
    entry_units = traffic2 * missing + costs.non_overlap * costs.generic[tasks][:, None]
    item, client, warmth = costs.warm(tasks, standby=False)
    eligible = local[client] >= 0
    item, client, warmth = item[eligible], client[eligible], warmth[eligible]
    direct_units = (
        traffic2 * cluster.missing_partitions[tasks[item], cluster.client_rack[client]]
        + costs.non_overlap * warmth
    )
    problem = PlacementProblem(
        client_rack=client_rack_local,
        n_racks=n_racks,
        supply=np.ones(n_items, dtype=np.int64),
        item_group=item_group.astype(np.int64),
        n_groups=int(item_group.max()) + 1,
        entry_item=np.repeat(np.arange(n_items, dtype=np.int64), n_racks),
        entry_rack=np.tile(np.arange(n_racks, dtype=np.int64), n_items),
        entry_exclude=np.full(n_items * n_racks, NO_EXCLUSION, dtype=np.int64),
        entry_capacity=np.ones(n_items * n_racks, dtype=np.int64),
        entry_cost=(entry_units * costs.scale + 1).reshape(-1),
        direct_item=item,
        direct_client=local[client],
        direct_cost=direct_units * costs.scale + (warmth != 0),
    )
    return clients[np.array([p[0] for p in place(problem, bounds)], dtype=np.int64)]


def _place_standbys(
    cluster: Cluster, holdings: Holdings, active: IntArray, clients: IntArray, load: IntArray
) -> list[list[int]]:
    """Standbys of every stateful task: never with the active, spread over racks, total load balanced."""
    standby: list[list[int]] = [[] for _ in range(cluster.n_tasks)]
    wanted = min(cluster.config.num_standbys, len(clients) - 1)
    tasks = np.flatnonzero(cluster.stateful).astype(np.int64)
    if wanted <= 0 or len(tasks) == 0:
        return standby
    n_items = len(tasks)
    copies = wanted * n_items
    costs = _Costs(cluster, holdings, copies)
    local = _local_index(clients, cluster.n_clients)
    used_racks, client_rack_local = _rack_layout(cluster, clients)
    n_racks = len(used_racks)
    # Reliability before stickiness (KIP-925 C.I): either rack penalty outweighs any overlap difference.
    spread = 2 * costs.non_overlap + 1
    same_rack, second_in_rack = 2 * spread, spread

    capacity = cluster.capacity[clients]
    lower_total, upper_total = proportional_bounds(int(load.sum()) + copies, capacity)
    current = load[clients]
    bounds = Bounds(np.maximum(lower_total - current, 0), np.maximum(upper_total - current, 0))

    owner = active[tasks]
    owner_rack = client_rack_local[local[owner]]
    tiers = [(1, 0)] + ([(wanted - 1, second_in_rack)] if wanted > 1 else [])
    n_entries = n_items * n_racks
    entry_item = np.repeat(np.arange(n_items, dtype=np.int64), n_racks)
    entry_rack = np.tile(np.arange(n_racks, dtype=np.int64), n_items)
    own = entry_rack == owner_rack[entry_item]
    exclude = np.where(own, local[owner][entry_item], NO_EXCLUSION)
    base_units = costs.non_overlap * costs.generic[tasks][entry_item] + np.where(own, same_rack, 0)
    item, client, warmth = costs.warm(tasks, standby=True)
    eligible = (local[client] >= 0) & (client != owner[item])
    item, client, warmth = item[eligible], client[eligible], warmth[eligible]
    direct_units = costs.non_overlap * warmth + np.where(
        cluster.client_rack[client] == cluster.client_rack[owner[item]], same_rack, 0
    )
    problem = PlacementProblem(
        client_rack=client_rack_local,
        n_racks=n_racks,
        supply=np.full(n_items, wanted, dtype=np.int64),
        item_group=np.zeros(n_items, dtype=np.int64),
        n_groups=1,
        entry_item=np.tile(entry_item, len(tiers)),
        entry_rack=np.tile(entry_rack, len(tiers)),
        entry_exclude=np.tile(exclude, len(tiers)),
        entry_capacity=np.concatenate([np.full(n_entries, cap) for cap, _ in tiers]),
        entry_cost=np.concatenate([(base_units + extra) * costs.scale + 1 for _, extra in tiers]),
        direct_item=item,
        direct_client=local[client],
        direct_cost=direct_units * costs.scale + (warmth != 0),
    )
    placed = place(problem, bounds)
    counts = np.bincount([p for ps in placed for p in ps if p >= 0], minlength=len(clients))
    for item_index, task in enumerate(tasks.tolist()):
        chosen = [p for p in placed[item_index] if p >= 0]
        for _ in range(wanted - len(chosen)):
            chosen.append(_repair_slot(chosen, int(local[int(active[task])]), counts, bounds.client_upper))
        standby[task] = sorted(int(clients[p]) for p in chosen)
    return standby


def _repair_slot(chosen: list[int], owner: int, counts: IntArray, upper: IntArray) -> int:
    """A home for a copy that collided with another copy of its task: the client with most room left."""
    room = upper - counts
    order = np.lexsort((np.arange(len(counts)), -room))
    for candidate in order.tolist():
        if candidate != owner and candidate not in chosen:
            counts[candidate] += 1
            return int(candidate)
    raise AssertionError("no client left for a standby: the caller bounds copies by the client count")


def compute_target(cluster: Cluster, holdings: Holdings) -> Target:
    clients = cluster.non_leaving()
    capacity = cluster.capacity[clients]
    stateful = np.flatnonzero(cluster.stateful).astype(np.int64)
    stateless = np.flatnonzero(~cluster.stateful).astype(np.int64)
    active = np.full(cluster.n_tasks, NO_CLIENT, dtype=np.int64)

    lower, upper = proportional_bounds(len(stateful), capacity)
    active[stateful] = _place_actives(cluster, holdings, stateful, clients, lower, upper)

    load = np.zeros(cluster.n_clients, dtype=np.int64)
    np.add.at(load, active[stateful], 1)
    lower, upper = proportional_bounds(cluster.n_tasks, capacity)
    taken = load[clients]
    active[stateless] = _place_actives(
        cluster, holdings, stateless, clients, np.maximum(lower - taken, 0), np.maximum(upper - taken, 0)
    )
    np.add.at(load, active[stateless], 1)
    return Target(active, _place_standbys(cluster, holdings, active, clients, load))
