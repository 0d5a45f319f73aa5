"""Balanced, min-cost placement of task copies on clients as one OR-Tools min-cost flow (KIP-925).

Why this shape: a dense task x client graph does not scale to 50,000 x 1,000. Inside a rack, clients that
neither hold a task nor have state for it are interchangeable for that task, so a copy enters a rack through
one *entry* arc into the rack's hub, which fans out to the rack's clients; only clients with a reason to be
preferred (they hold the task, or have state for it) get a *direct* arc. A copy that must avoid one client of
its rack (a standby never sits with its active) enters an *exclusion* node shared by every copy that avoids
the same client; that node reaches the rest of the rack through square-root blocks, so the exclusion stays
exact with O(clients x sqrt(rack size)) arcs, and every path stays short (push-relabel hates long chains).

Balance is exact: per-client (and per group-and-client) lower and upper bounds are lower-bounded arcs,
rewritten as node supplies. When the bounds cannot all hold together (exclusions can make them infeasible),
the solve relaxes them step by step instead of failing.

The flow says how many copies enter each hub or exclusion node and how many leave at each client; a small
exact matching per rack then decides which entry feeds which client, and copies of one task never share a
client.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np
from ortools.graph.python import min_cost_flow

from smoothscale.assignor.cluster import IntArray

NO_EXCLUSION = -1
# Up to this many (task, client) pairs, tasks with several copies get the exact dense graph.
DENSE_LIMIT = 200_000


UNLIMITED = np.iinfo(np.int32).max


@dataclass(frozen=True, slots=True)
class Bounds:
    """Count bounds per client, and optionally per (group, client) and per (class, client).

    Groups are subtopologies (balanced each on its own); classes gather groups whose sum is bounded
    together (all stateless actives, say, next to standbys that share the same clients).
    """

    client_lower: IntArray
    client_upper: IntArray
    group_lower: IntArray | None = None
    group_upper: IntArray | None = None
    class_lower: IntArray | None = None
    class_upper: IntArray | None = None

    def relaxations(self) -> list[Bounds]:
        """The bounds to try in order, when the full set cannot hold together.

        With classes, the client bounds are the total load (the softest promise) and go first; then the
        per-group bounds; then every lower bound; last, only the structure (distinct clients, exclusions).
        """
        open_lower = np.zeros_like(self.client_lower)
        open_upper = np.full_like(self.client_upper, UNLIMITED)
        client = (self.client_lower, self.client_upper)
        if self.class_lower is not None:
            client = (open_lower, open_upper)
        steps = [self]
        if self.class_lower is not None:
            steps.append(replace(self, client_lower=client[0], client_upper=client[1]))
        ungrouped = replace(
            self, client_lower=client[0], client_upper=client[1], group_lower=None, group_upper=None
        )
        if self.group_lower is not None:
            steps.append(ungrouped)
        no_lower = replace(
            ungrouped,
            client_lower=open_lower,
            class_lower=None if self.class_lower is None else np.zeros_like(self.class_lower),
        )
        steps.append(no_lower)
        steps.append(
            replace(
                no_lower,
                client_upper=open_upper,
                class_upper=None if self.class_upper is None else np.full_like(self.class_upper, UNLIMITED),
            )
        )
        return steps


@dataclass(frozen=True, slots=True)
class PlacementProblem:
    """Items (tasks) to place, each needing `supply` copies on distinct clients.

    Clients are local positions 0..n_clients-1; `client_rack` gives each one's rack. Entry arcs put copies of
    an item into a rack (optionally excluding one client of that rack); direct arcs put a copy on one client.
    Costs are integers, already scaled by the caller.
    """

    client_rack: IntArray
    n_racks: int
    supply: IntArray
    item_group: IntArray
    n_groups: int
    entry_item: IntArray
    entry_rack: IntArray
    entry_exclude: IntArray
    entry_capacity: IntArray
    entry_cost: IntArray
    direct_item: IntArray
    direct_client: IntArray
    direct_cost: IntArray
    group_class: IntArray | None = None  # per group: its class, when classes are bounded

    @property
    def n_items(self) -> int:
        return len(self.supply)

    @property
    def n_clients(self) -> int:
        return len(self.client_rack)


class PlacementInfeasible(RuntimeError):
    """Even without balance bounds the copies do not fit (too few distinct clients)."""


@dataclass(slots=True)
class _Graph:
    tails: list[IntArray]
    heads: list[IntArray]
    capacities: list[IntArray]
    costs: list[IntArray]
    n_arcs: int = 0

    def add(self, tails: IntArray, heads: IntArray, capacities: IntArray, costs: IntArray) -> IntArray:
        """Append arcs and return their indices."""
        count = len(tails)
        self.tails.append(tails.astype(np.int32))
        self.heads.append(heads.astype(np.int32))
        self.capacities.append(capacities.astype(np.int64))
        self.costs.append(costs.astype(np.int64))
        start = self.n_arcs
        self.n_arcs += count
        return np.arange(start, start + count, dtype=np.int64)


def place(problem: PlacementProblem, bounds: Bounds) -> list[list[int]]:
    """Solve the placement; returns, per item, the local client positions of its copies.

    A copy that could not be given a distinct client (only when one task has several copies in one rack
    and they collide) comes back as -1, for the caller to re-home.
    """
    for attempt in bounds.relaxations():
        result = _solve(problem, attempt)
        if result is not None:
            return result
    raise PlacementInfeasible("copies do not fit on distinct clients")


@dataclass(frozen=True, slots=True)
class _Layout:
    """Node ids: items | hubs | exclusions | blocks | group-clients | class-clients | clients | sink."""

    n_items: int
    n_groups: int
    n_clients: int
    members: list[IntArray]  # per rack: local client positions
    hub_base: int
    exclusion_keys: IntArray  # (group * n_clients + excluded client) for each exclusion node
    exclusion_base: int
    block_base: IntArray  # per (group, rack): first block node
    block_size: IntArray  # per rack
    grouped: bool
    group_client_base: int
    group_class: IntArray | None  # set when class-client nodes exist
    class_client_base: int
    client_base: int

    @property
    def sink(self) -> int:
        return self.client_base + self.n_clients

    def hub(self, group: IntArray, rack: IntArray) -> IntArray:
        return self.hub_base + group * len(self.members) + rack

    def exit(self, group: IntArray, client: IntArray) -> IntArray:
        """Where a copy of `group` leaves the rack structure toward `client`."""
        if self.grouped:
            return self.group_client_base + group * self.n_clients + client
        return self.class_exit(group, client)

    def class_exit(self, group: IntArray, client: IntArray) -> IntArray:
        if self.group_class is not None:
            return self.class_client_base + self.group_class[group] * self.n_clients + client
        return self.client_base + client

    def exclusion(self, group: IntArray, client: IntArray) -> IntArray:
        keys = group * self.n_clients + client
        return self.exclusion_base + np.searchsorted(self.exclusion_keys, keys)


def _layout(problem: PlacementProblem, grouped: bool, classed: bool, dense_nodes: int = 0) -> _Layout:
    """Node ids of the aggregated graph, or, with `dense_nodes`, of the dense one (its own nodes first)."""
    n_items, n_clients, n_groups = problem.n_items, problem.n_clients, problem.n_groups
    members = [np.flatnonzero(problem.client_rack == r).astype(np.int64) for r in range(problem.n_racks)]
    excluded = problem.entry_exclude != NO_EXCLUSION
    keys = np.unique(
        problem.item_group[problem.entry_item[excluded]] * n_clients + problem.entry_exclude[excluded]
    )
    if dense_nodes:
        keys = keys[:0]
    block_size = np.array([max(1, int(np.ceil(np.sqrt(len(m))))) for m in members], dtype=np.int64)
    n_blocks = np.array([-(-len(m) // b) for m, b in zip(members, block_size, strict=True)], dtype=np.int64)
    hub_base = n_items
    exclusion_base = hub_base + (dense_nodes if dense_nodes else n_groups * problem.n_racks)
    blocks_start = exclusion_base + len(keys)
    per_group = int(n_blocks.sum()) if len(keys) else 0
    block_base = (
        blocks_start
        + np.arange(n_groups)[:, None] * per_group
        + np.concatenate([[0], np.cumsum(n_blocks)[:-1]])[None, :]
    )
    group_client_base = blocks_start + n_groups * per_group
    class_client_base = group_client_base + (n_groups * n_clients if grouped else 0)
    group_class = problem.group_class if classed else None
    n_classes = 0 if group_class is None else int(group_class.max()) + 1
    client_base = class_client_base + n_classes * n_clients
    return _Layout(
        n_items,
        n_groups,
        n_clients,
        members,
        hub_base,
        keys,
        exclusion_base,
        block_base.astype(np.int64),
        block_size,
        grouped,
        group_client_base,
        group_class,
        class_client_base,
        client_base,
    )


def _solve(problem: PlacementProblem, bounds: Bounds) -> list[list[int]] | None:
    many_copies = problem.n_items > 0 and int(problem.supply.max()) > 1
    if many_copies and problem.n_items * problem.n_clients <= DENSE_LIMIT:
        return _solve_dense(problem, bounds)
    return _solve_aggregated(problem, bounds)


def _run(graph: _Graph, supplies: IntArray) -> IntArray | None:
    """Solve; the flow of every arc, or None when the supplies cannot all be routed."""
    solver = min_cost_flow.SimpleMinCostFlow()
    solver.add_arcs_with_capacity_and_unit_cost(
        np.concatenate(graph.tails),
        np.concatenate(graph.heads),
        np.concatenate(graph.capacities),
        np.concatenate(graph.costs),
    )
    solver.set_nodes_supplies(np.arange(len(supplies), dtype=np.int32), supplies)
    if solver.solve() != solver.OPTIMAL:
        return None
    flows: IntArray = solver.flows(np.arange(graph.n_arcs, dtype=np.int64))
    return flows


def _solve_dense(problem: PlacementProblem, bounds: Bounds) -> list[list[int]] | None:
    """Exact for tasks with several copies: one node per (task, client) lets each take one copy at most.

    Items x racks nodes carry the entry tiers (first copy in a rack cheaper than the next); items x clients
    nodes merge entries and direct arcs. Only used where that graph is small.
    """
    n_items, n_clients, n_racks = problem.n_items, problem.n_clients, problem.n_racks
    tiers_base = n_items
    slots_base = tiers_base + n_items * n_racks
    lay = _layout(
        problem,
        bounds.group_lower is not None,
        bounds.class_lower is not None,
        dense_nodes=n_items * (n_racks + n_clients),
    )
    supplies = np.zeros(lay.sink + 1, dtype=np.int64)
    supplies[:n_items] = problem.supply
    supplies[lay.sink] = -int(problem.supply.sum())
    graph = _Graph([], [], [], [])
    graph.add(
        problem.entry_item,
        tiers_base + problem.entry_item * n_racks + problem.entry_rack,
        problem.entry_capacity,
        problem.entry_cost,
    )
    excluded = np.full((n_items, n_racks), NO_EXCLUSION, dtype=np.int64)
    excluded[problem.entry_item, problem.entry_rack] = problem.entry_exclude
    items = np.repeat(np.arange(n_items, dtype=np.int64), n_clients)
    clients = np.tile(np.arange(n_clients, dtype=np.int64), n_items)
    racks = problem.client_rack[clients]
    allowed = excluded[items, racks] != clients
    _unlimited(
        graph,
        tiers_base + items[allowed] * n_racks + racks[allowed],
        slots_base + items[allowed] * n_clients + clients[allowed],
        1,
    )
    graph.add(
        problem.direct_item,
        slots_base + problem.direct_item * n_clients + problem.direct_client,
        np.ones(len(problem.direct_item), dtype=np.int64),
        problem.direct_cost,
    )
    slot_arcs = _unlimited(
        graph, slots_base + items * n_clients + clients, lay.exit(problem.item_group[items], clients), 1
    )
    _add_balance(graph, lay, bounds, supplies)
    flows = _run(graph, supplies)
    if flows is None:
        return None
    placed: list[list[int]] = [[] for _ in range(n_items)]
    taken = flows[slot_arcs] > 0
    for item, client in zip(items[taken].tolist(), clients[taken].tolist(), strict=True):
        placed[item].append(client)
    return placed


def _solve_aggregated(problem: PlacementProblem, bounds: Bounds) -> list[list[int]] | None:
    lay = _layout(problem, bounds.group_lower is not None, bounds.class_lower is not None)
    n_nodes = lay.sink + 1
    supplies = np.zeros(n_nodes, dtype=np.int64)
    supplies[: lay.n_items] = problem.supply
    supplies[lay.sink] = -int(problem.supply.sum())
    graph = _Graph([], [], [], [])
    unlimited = max(int(problem.supply.sum()), 1)

    entry_groups = problem.item_group[problem.entry_item]
    whole = problem.entry_exclude == NO_EXCLUSION
    entry_heads = np.where(
        whole,
        lay.hub(entry_groups, problem.entry_rack),
        lay.exclusion(entry_groups, np.maximum(problem.entry_exclude, 0)),
    )
    entry_arcs = graph.add(problem.entry_item, entry_heads, problem.entry_capacity, problem.entry_cost)
    direct_groups = problem.item_group[problem.direct_item]
    direct_arcs = graph.add(
        problem.direct_item,
        lay.exit(direct_groups, problem.direct_client),
        np.ones(len(problem.direct_item), dtype=np.int64),
        problem.direct_cost,
    )
    fan_out = _add_fan_out(graph, lay, problem.client_rack, unlimited)
    _add_balance(graph, lay, bounds, supplies)

    flows = _run(graph, supplies)
    if flows is None:
        return None
    placed: list[list[int]] = [[] for _ in range(lay.n_items)]
    chosen = flows[direct_arcs] > 0
    for item, client in zip(
        problem.direct_item[chosen].tolist(), problem.direct_client[chosen].tolist(), strict=True
    ):
        placed[item].append(client)
    exits = np.zeros((lay.n_groups, lay.n_clients), dtype=np.int64)
    arcs, groups, clients = fan_out
    np.add.at(exits, (groups, clients), flows[arcs])
    used = flows[entry_arcs]
    for group in range(lay.n_groups):
        for rack, rack_members in enumerate(lay.members):
            in_rack = (used > 0) & (entry_groups == group) & (problem.entry_rack == rack)
            if np.any(in_rack):
                _fill_rack(
                    placed,
                    rack_members,
                    exits[group, rack_members],
                    np.repeat(problem.entry_item[in_rack], used[in_rack]),
                    np.repeat(problem.entry_exclude[in_rack], used[in_rack]),
                )
    return placed


def _add_fan_out(
    graph: _Graph, lay: _Layout, client_rack: IntArray, unlimited: int
) -> tuple[IntArray, IntArray, IntArray]:
    """Hub -> every client of its rack; exclusion node -> the rest of its rack through blocks.

    Returns the arcs that end at a client's exit node, with their group and client, to count exits.
    """
    exit_arcs, exit_groups, exit_clients = [], [], []
    for group in range(lay.n_groups):
        for rack, rack_members in enumerate(lay.members):
            count = len(rack_members)
            if count == 0:
                continue
            g = np.full(count, group, dtype=np.int64)
            hubs = lay.hub(g, np.full(count, rack, dtype=np.int64))
            exit_arcs.append(_unlimited(graph, hubs, lay.exit(g, rack_members), unlimited))
            exit_groups.append(g)
            exit_clients.append(rack_members)
            if len(lay.exclusion_keys) == 0:
                continue
            block_of = np.arange(count) // lay.block_size[rack]
            blocks = lay.block_base[group, rack] + block_of
            exit_arcs.append(_unlimited(graph, blocks, lay.exit(g, rack_members), unlimited))
            exit_groups.append(g)
            exit_clients.append(rack_members)
    for key in lay.exclusion_keys.tolist():
        group, excluded = divmod(key, lay.n_clients)
        rack = int(client_rack[excluded])
        rack_members = lay.members[rack]
        size = int(lay.block_size[rack])
        position = int(np.searchsorted(rack_members, excluded))
        own_block = position // size
        node = int(lay.exclusion(np.array([group]), np.array([excluded]))[0])
        n_blocks = -(-len(rack_members) // size)
        others = np.array([b for b in range(n_blocks) if b != own_block], dtype=np.int64)
        _unlimited(graph, np.full(len(others), node), lay.block_base[group, rack] + others, unlimited)
        block_members = rack_members[own_block * size : (own_block + 1) * size]
        siblings = block_members[block_members != excluded]
        g = np.full(len(siblings), group, dtype=np.int64)
        exit_arcs.append(_unlimited(graph, np.full(len(siblings), node), lay.exit(g, siblings), unlimited))
        exit_groups.append(g)
        exit_clients.append(siblings)
    return np.concatenate(exit_arcs), np.concatenate(exit_groups), np.concatenate(exit_clients)


def _unlimited(graph: _Graph, tails: IntArray, heads: IntArray, capacity: int) -> IntArray:
    count = len(tails)
    return graph.add(tails, heads, np.full(count, capacity), np.zeros(count, dtype=np.int64))


def _add_balance(graph: _Graph, lay: _Layout, bounds: Bounds, supplies: IntArray) -> None:
    """Lower-bounded arcs group-client -> class-client -> client -> sink, lower bounds moved to supplies."""
    clients = np.arange(lay.n_clients, dtype=np.int64)
    if lay.grouped:
        assert bounds.group_lower is not None and bounds.group_upper is not None
        groups = np.repeat(np.arange(lay.n_groups), lay.n_clients)
        members = np.tile(clients, lay.n_groups)
        tails = lay.exit(groups, members)
        heads = lay.class_exit(groups, members)
        _lower_bounded(graph, supplies, tails, heads, bounds.group_lower, bounds.group_upper)
    if lay.group_class is not None:
        assert bounds.class_lower is not None and bounds.class_upper is not None
        n_classes = int(lay.group_class.max()) + 1
        tails = lay.class_client_base + np.arange(n_classes * lay.n_clients)
        heads = lay.client_base + np.tile(clients, n_classes)
        _lower_bounded(graph, supplies, tails, heads, bounds.class_lower, bounds.class_upper)
    sinks = np.full(lay.n_clients, lay.sink)
    _lower_bounded(
        graph, supplies, lay.client_base + clients, sinks, bounds.client_lower, bounds.client_upper
    )


def _lower_bounded(
    graph: _Graph, supplies: IntArray, tails: IntArray, heads: IntArray, lower: IntArray, upper: IntArray
) -> None:
    """Arcs with flow in [lower, upper]: the lower part is pre-routed by moving it into the supplies."""
    lower, upper = lower.reshape(-1), upper.reshape(-1)
    graph.add(tails, heads, upper - lower, np.zeros(len(tails), dtype=np.int64))
    np.subtract.at(supplies, tails, lower)
    np.add.at(supplies, heads, lower)


def _fill_rack(
    placed: list[list[int]],
    rack_members: IntArray,
    slots: IntArray,
    items: IntArray,
    excluded: IntArray,
) -> None:
    """Hand the copies that entered one rack to the rack's clients, honouring exclusions exactly.

    Which entry feeds which client is a small transportation problem between entry classes (the hub, and
    one class per excluded client) and the clients' exit counts; it is feasible because the flow was.
    """
    classes = np.unique(excluded)
    demand = np.array([int(np.count_nonzero(excluded == c)) for c in classes], dtype=np.int64)
    open_slots = np.flatnonzero(slots > 0)
    clients = rack_members[open_slots]
    solver = min_cost_flow.SimpleMinCostFlow()
    n_classes = len(classes)
    tails, heads = [], []
    for k, excluded_client in enumerate(classes.tolist()):
        allowed = np.flatnonzero(clients != excluded_client)
        tails.append(np.full(len(allowed), k))
        heads.append(n_classes + allowed)
    tail = np.concatenate(tails).astype(np.int32)
    head = np.concatenate(heads).astype(np.int32)
    solver.add_arcs_with_capacity_and_unit_cost(
        tail, head, np.full(len(tail), int(demand.sum()), dtype=np.int64), np.zeros(len(tail), dtype=np.int64)
    )
    supplies = np.concatenate([demand, -slots[open_slots]])
    solver.set_nodes_supplies(np.arange(len(supplies), dtype=np.int32), supplies)
    solver.solve()
    flows = solver.flows(np.arange(len(tail), dtype=np.int64))
    done: list[list[int]] = []  # [item, excluded client, client] of every copy placed in this rack
    clashes: list[tuple[int, int, int]] = []
    for k, excluded_client in enumerate(classes.tolist()):
        mask = (tail == k) & (flows > 0)
        slots_of_class = _interleave(
            [int(clients[i - n_classes]) for i in head[mask].tolist()], flows[mask].tolist()
        )
        for item, client in zip(
            sorted(items[excluded == excluded_client].tolist()), slots_of_class, strict=True
        ):
            if client in placed[item]:
                clashes.append((item, excluded_client, client))
            else:
                placed[item].append(client)
                done.append([item, excluded_client, client])
    for item, excluded_client, client in clashes:
        _swap_in(placed, done, item, excluded_client, client)


def _interleave(clients: list[int], counts: list[int]) -> list[int]:
    """Slots in round-robin order over clients, so that neighbouring copies (one task's) land apart."""
    slots: list[int] = []
    remaining = list(counts)
    while any(remaining):
        for index, client in enumerate(clients):
            if remaining[index]:
                slots.append(client)
                remaining[index] -= 1
    return slots


def _swap_in(placed: list[list[int]], done: list[list[int]], item: int, excluded: int, client: int) -> None:
    """Place a copy whose slot is on a client that already holds its task, by trading slots with a copy
    placed earlier in the same rack (same cost: both came through this rack's entries)."""
    for entry in done:
        other, other_excluded, other_client = entry
        if (
            other != item
            and client not in placed[other]
            and client != other_excluded
            and other_client not in placed[item]
            and other_client != excluded
        ):
            placed[other][placed[other].index(other_client)] = client
            placed[item].append(other_client)
            entry[2] = client
            done.append([item, excluded, other_client])
            return
    placed[item].append(-1)
