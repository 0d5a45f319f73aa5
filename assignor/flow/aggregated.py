"""The aggregated placement graph: copies enter a rack's hub (or an exclusion node) and fan out from it."""

from __future__ import annotations

import numpy as np

from smoothscale.assignor.cluster import IntArray
from smoothscale.assignor.flow.graph import Graph, run, zero_cost_arcs
from smoothscale.assignor.flow.layout import Layout, add_balance, layout
from smoothscale.assignor.flow.problem import NO_EXCLUSION, Bounds, PlacementProblem
from smoothscale.assignor.flow.rack_fill import fill_rack


def solve_aggregated(problem: PlacementProblem, bounds: Bounds) -> list[list[int]] | None:
    lay = layout(problem, bounds.group_lower is not None, bounds.class_lower is not None)
    n_nodes = lay.sink + 1
    supplies = np.zeros(n_nodes, dtype=np.int64)
    supplies[: lay.n_items] = problem.supply
    supplies[lay.sink] = -int(problem.supply.sum())
    graph = Graph([], [], [], [])
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
    add_balance(graph, lay, bounds, supplies)

    flows = run(graph, supplies)
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
                fill_rack(
                    placed,
                    rack_members,
                    exits[group, rack_members],
                    np.repeat(problem.entry_item[in_rack], used[in_rack]),
                    np.repeat(problem.entry_exclude[in_rack], used[in_rack]),
                )
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
        zero_cost_arcs(graph, np.full(len(others), node), lay.block_base[group, rack] + others, unlimited)
        block_members = rack_members[own_block * size : (own_block + 1) * size]
        siblings = block_members[block_members != excluded]
        g = np.full(len(siblings), group, dtype=np.int64)
        exit_arcs.append(
            zero_cost_arcs(graph, np.full(len(siblings), node), lay.exit(g, siblings), unlimited)
        )
        exit_groups.append(g)
        exit_clients.append(siblings)
    return np.concatenate(exit_arcs), np.concatenate(exit_groups), np.concatenate(exit_clients)
