"""The aggregated placement graph: copies enter a rack's hub (or an exclusion node) and fan out from it.

An item with several copies (a task's standbys) could send more copies into a rack than the rack has
clients it may use, or pile them onto the few clients that have slots: the hub forgets which copy is whose.
Two things keep the result exact. What an item sends into a rack, through entries and direct arcs alike,
passes one *rack-cap* node whose capacity is the number of the rack's clients the item may use. And the
per-rack fill (`rack_fill`) hands out the copies with a constructive decomposition of the flow's counts;
where none exists, the rack is marked *dense*: re-solved with one node per (item, client) for those items,
which is exact, so no copy is ever placed off the flow's counts and every bound holds.
"""

from __future__ import annotations

from collections.abc import Set
from dataclasses import dataclass

import numpy as np

from smoothscale.assignor.cluster import BoolArray, IntArray
from smoothscale.assignor.flow.graph import Graph, run, zero_cost_arcs
from smoothscale.assignor.flow.layout import Layout, add_balance, layout
from smoothscale.assignor.flow.problem import NO_EXCLUSION, Bounds, PlacementProblem
from smoothscale.assignor.flow.rack_fill import RackEntries, fill_rack


@dataclass(frozen=True, slots=True)
class Undecomposed:
    """The flow's counts in these racks admit no placement on distinct clients: solve them densely."""

    racks: frozenset[int]


@dataclass(frozen=True, slots=True)
class _RackCaps:
    """The nodes that keep items with several copies exact, numbered after the sink.

    One rack-cap node per (such item, rack it reaches with fewer usable clients than it has copies), of
    capacity the rack's clients it may use; in a dense rack, one per (such item, rack) whatever its size,
    plus a tier node (where its entries arrive) and a slot node per client of the rack.
    """

    n_racks: int
    n_clients: int
    keys: IntArray  # item * n_racks + rack, ascending
    excluded: IntArray  # per key: the client the item's entries into the rack exclude, or NO_EXCLUSION
    base: int  # node of the first rack-cap
    dense: BoolArray  # per key: its rack is solved densely
    tier_base: int
    slot_item: IntArray  # per slot node, ascending by (item, client)
    slot_client: IntArray
    slot_base: int

    @staticmethod
    def of(problem: PlacementProblem, lay: Layout, dense_racks: Set[int]) -> _RackCaps:
        n_racks = problem.n_racks
        entry = problem.supply[problem.entry_item] > 1
        direct = problem.supply[problem.direct_item] > 1
        entry_keys = problem.entry_item[entry] * n_racks + problem.entry_rack[entry]
        direct_racks = problem.client_rack[problem.direct_client[direct]]
        keys = np.unique(np.concatenate([entry_keys, problem.direct_item[direct] * n_racks + direct_racks]))
        excluded = np.full(len(keys), NO_EXCLUSION, dtype=np.int64)
        excluded[np.searchsorted(keys, entry_keys)] = problem.entry_exclude[entry]
        dense = np.isin(keys % n_racks, np.array(sorted(dense_racks), dtype=np.int64))
        # A cap that the item's copies cannot exceed anyway (a rack with room for all of them) is left out.
        members = np.array([len(m) for m in lay.members], dtype=np.int64)
        usable = members[keys % n_racks] - (excluded != NO_EXCLUSION)
        needed = dense | (usable < problem.supply[keys // n_racks])
        keys, excluded, dense = keys[needed], excluded[needed], dense[needed]
        item, rack = np.divmod(keys[dense], n_racks)
        slot_item = np.repeat(item, [len(lay.members[r]) for r in rack.tolist()]).astype(np.int64)
        slot_client = np.concatenate([np.zeros(0, dtype=np.int64), *(lay.members[r] for r in rack.tolist())])
        order = np.lexsort((slot_client, slot_item))
        base = lay.sink + 1
        tier_base = base + len(keys)
        return _RackCaps(
            n_racks,
            problem.n_clients,
            keys.astype(np.int64),
            excluded,
            base,
            dense,
            tier_base,
            slot_item[order],
            slot_client[order].astype(np.int64),
            tier_base + int(dense.sum()),
        )

    @property
    def n_nodes(self) -> int:
        return self.slot_base + len(self.slot_item)

    def index(self, item: IntArray, rack: IntArray) -> IntArray:
        found: IntArray = np.searchsorted(self.keys, item * self.n_racks + rack)
        return found

    def tier(self, index: IntArray) -> IntArray:
        """The tier node of dense pairs, by their index among all pairs."""
        tiers: IntArray = self.tier_base + np.cumsum(self.dense)[index] - 1
        return tiers

    def slot(self, item: IntArray, client: IntArray) -> IntArray:
        keys = self.slot_item * self.n_clients + self.slot_client
        slots: IntArray = self.slot_base + np.searchsorted(keys, item * self.n_clients + client)
        return slots

    def add_caps(self, graph: Graph, lay: Layout) -> None:
        """item -> rack-cap: what one item sends into a rack, at most the rack's clients it may use."""
        item, rack = np.divmod(self.keys, self.n_racks)
        members = np.array([len(m) for m in lay.members], dtype=np.int64)
        usable = members[rack] - (self.excluded != NO_EXCLUSION)
        graph.add(item, self.base + np.arange(len(self.keys)), usable, np.zeros(len(item), dtype=np.int64))

    def add_slots(self, graph: Graph, problem: PlacementProblem, lay: Layout) -> IntArray:
        """tier -> slot (never the excluded client) -> exit; returns the slot -> exit arcs."""
        pair = self.index(self.slot_item, problem.client_rack[self.slot_client])
        slots = self.slot_base + np.arange(len(self.slot_item))
        allowed = self.excluded[pair] != self.slot_client
        zero_cost_arcs(graph, self.tier(pair[allowed]), slots[allowed], 1)
        return zero_cost_arcs(graph, slots, lay.exit(problem.item_group[self.slot_item], self.slot_client), 1)

    def through(self, item: IntArray, rack: IntArray) -> tuple[IntArray, BoolArray, IntArray]:
        """For arcs of `item` into `rack`: their tail (the pair's rack-cap node if there is one, else the
        item itself), whether the rack is dense for them, and their pair (0 where none)."""
        if len(self.keys) == 0:
            return item, np.zeros(len(item), dtype=np.bool_), np.zeros(len(item), dtype=np.int64)
        key = item * self.n_racks + rack
        pair = np.minimum(np.searchsorted(self.keys, key), len(self.keys) - 1)
        capped = self.keys[pair] == key
        pair = np.where(capped, pair, 0)
        tails: IntArray = np.where(capped, self.base + pair, item)
        dense: BoolArray = capped & self.dense[pair]
        return tails, dense, pair


def solve_aggregated(
    problem: PlacementProblem, bounds: Bounds, dense_racks: Set[int] = frozenset()
) -> list[list[int]] | Undecomposed | None:
    """Per item, the clients of its copies; None when the bounds cannot hold; `Undecomposed` naming racks
    to solve densely when the flow's counts cannot be handed out on distinct clients."""
    lay = layout(problem, bounds.group_lower is not None, bounds.class_lower is not None)
    caps = _RackCaps.of(problem, lay, dense_racks)
    graph = Graph([], [], [], [])
    supplies = np.zeros(caps.n_nodes, dtype=np.int64)
    supplies[: lay.n_items] = problem.supply
    supplies[lay.sink] = -int(problem.supply.sum())
    caps.add_caps(graph, lay)

    entry_groups = problem.item_group[problem.entry_item]
    entry_tails, entry_dense, entry_pair = caps.through(problem.entry_item, problem.entry_rack)
    entry_heads = np.where(
        problem.entry_exclude == NO_EXCLUSION,
        lay.hub(entry_groups, problem.entry_rack),
        lay.exclusion(entry_groups, np.maximum(problem.entry_exclude, 0)),
    )
    entry_heads[entry_dense] = caps.tier(entry_pair[entry_dense])
    entry_arcs = graph.add(entry_tails, entry_heads, problem.entry_capacity, problem.entry_cost)

    direct_rack = problem.client_rack[problem.direct_client]
    direct_tails, direct_dense, _ = caps.through(problem.direct_item, direct_rack)
    direct_heads = lay.exit(problem.item_group[problem.direct_item], problem.direct_client)
    direct_heads[direct_dense] = caps.slot(
        problem.direct_item[direct_dense], problem.direct_client[direct_dense]
    )
    ones = np.ones(len(direct_tails), dtype=np.int64)
    direct_arcs = graph.add(direct_tails, direct_heads, ones, problem.direct_cost)

    slot_arcs = caps.add_slots(graph, problem, lay)
    fan_out = _add_fan_out(graph, lay, problem.client_rack, max(int(problem.supply.sum()), 1))
    add_balance(graph, lay, bounds, supplies)

    flows = run(graph, supplies)
    if flows is None:
        return None
    placed: list[list[int]] = [[] for _ in range(lay.n_items)]
    chosen = (flows[direct_arcs] > 0) & ~direct_dense
    taken = flows[slot_arcs] > 0
    pairs = zip(
        np.concatenate([problem.direct_item[chosen], caps.slot_item[taken]]).tolist(),
        np.concatenate([problem.direct_client[chosen], caps.slot_client[taken]]).tolist(),
        strict=True,
    )
    for item, client in pairs:
        placed[item].append(client)
    exits = np.zeros((lay.n_groups, lay.n_clients), dtype=np.int64)
    arcs, groups, clients = fan_out
    np.add.at(exits, (groups, clients), flows[arcs])
    used = np.where(entry_dense, 0, flows[entry_arcs])
    carrying = np.flatnonzero(used > 0)  # the entries a copy went through, in entry order
    carrying_group, carrying_rack = entry_groups[carrying], problem.entry_rack[carrying]
    failed = set()
    for group in range(lay.n_groups):
        for rack, rack_members in enumerate(lay.members):
            in_rack = carrying[(carrying_group == group) & (carrying_rack == rack)]
            if len(in_rack) == 0:
                continue
            entries = RackEntries(
                rack_members,
                exits[group, rack_members],
                np.repeat(problem.entry_item[in_rack], used[in_rack]),
                np.repeat(problem.entry_exclude[in_rack], used[in_rack]),
            )
            if not fill_rack(placed, entries):
                failed.add(rack)
    if failed:
        return Undecomposed(frozenset(failed))
    return placed


def _add_fan_out(
    graph: Graph, lay: Layout, client_rack: IntArray, unlimited: int
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
            exit_arcs.append(zero_cost_arcs(graph, hubs, lay.exit(g, rack_members), unlimited))
            exit_groups.append(g)
            exit_clients.append(rack_members)
            if len(lay.exclusion_keys) == 0:
                continue
            block_of = np.arange(count) // lay.block_size[rack]
            blocks = lay.block_base[group, rack] + block_of
            exit_arcs.append(zero_cost_arcs(graph, blocks, lay.exit(g, rack_members), unlimited))
            exit_groups.append(g)
            exit_clients.append(rack_members)
    if len(lay.exclusion_keys):
        arcs, groups, clients = _add_exclusion_arcs(graph, lay, client_rack, unlimited)
        exit_arcs.append(arcs)
        exit_groups.append(groups)
        exit_clients.append(clients)
    return np.concatenate(exit_arcs), np.concatenate(exit_groups), np.concatenate(exit_clients)


def _add_exclusion_arcs(
    graph: Graph, lay: Layout, client_rack: IntArray, unlimited: int
) -> tuple[IntArray, IntArray, IntArray]:
    """Each exclusion node -> the other blocks of its rack, then -> the other clients of its own block.

    Built for all nodes at once, in node order (each node's block arcs, then its client arcs); returns the
    arcs to clients' exit nodes with their group and client.
    """
    group, excluded = np.divmod(lay.exclusion_keys, lay.n_clients)
    node = lay.exclusion_base + np.arange(len(group))  # exclusion keys are sorted and distinct
    rack = client_rack[excluded]
    sizes = np.array([len(m) for m in lay.members], dtype=np.int64)
    size = lay.block_size[rack]
    rank_in_rack = np.zeros(lay.n_clients, dtype=np.int64)
    for rack_members in lay.members:
        rank_in_rack[rack_members] = np.arange(len(rack_members))
    position = rank_in_rack[excluded]
    own = position // size
    n_other_blocks = -(-sizes[rack] // size) - 1
    n_siblings = np.minimum(size, sizes[rack] - own * size) - 1
    first_arc = np.cumsum(n_other_blocks + n_siblings) - n_other_blocks - n_siblings

    def spread(counts: IntArray) -> tuple[IntArray, IntArray]:
        """(node index, index within the node) of every arc of `counts` arcs per node."""
        index = np.repeat(np.arange(len(counts)), counts)
        return index, np.arange(len(index)) - np.repeat(np.cumsum(counts) - counts, counts)

    block_node, block_index = spread(n_other_blocks)
    block = block_index + (block_index >= own[block_node])  # every block but the node's own
    sibling_node, sibling_index = spread(n_siblings)
    at = own[sibling_node] * size[sibling_node] + sibling_index
    at += at >= position[sibling_node]  # every client of the own block but the excluded one
    offsets = np.cumsum(sizes) - sizes
    sibling = np.concatenate([np.zeros(0, dtype=np.int64), *lay.members])[offsets[rack[sibling_node]] + at]
    sibling_group = group[sibling_node]

    n_arcs = int(n_other_blocks.sum() + n_siblings.sum())
    tails, heads = np.empty(n_arcs, dtype=np.int64), np.empty(n_arcs, dtype=np.int64)
    block_slot = first_arc[block_node] + block_index
    tails[block_slot] = node[block_node]
    heads[block_slot] = lay.block_base[group[block_node], rack[block_node]] + block
    sibling_slot = first_arc[sibling_node] + n_other_blocks[sibling_node] + sibling_index
    tails[sibling_slot] = node[sibling_node]
    heads[sibling_slot] = lay.exit(sibling_group, sibling)
    arcs = zero_cost_arcs(graph, tails, heads, unlimited)
    return arcs[sibling_slot], sibling_group, sibling
