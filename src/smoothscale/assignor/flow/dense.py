"""The exact placement graph, one node per (item, client): for items with several copies, when small."""

from __future__ import annotations

import numpy as np

from smoothscale.assignor.flow.graph import Graph, run, zero_cost_arcs
from smoothscale.assignor.flow.layout import add_balance, layout
from smoothscale.assignor.flow.problem import NO_EXCLUSION, Bounds, PlacementProblem


def solve_dense(problem: PlacementProblem, bounds: Bounds) -> list[list[int]] | None:
    """Exact for tasks with several copies: one node per (task, client) lets each take one copy at most.

    Items x racks nodes carry the entry tiers (first copy in a rack cheaper than the next); items x clients
    nodes merge entries and direct arcs. Only used where that graph is small.
    """
    n_items, n_clients, n_racks = problem.n_items, problem.n_clients, problem.n_racks
    tiers_base = n_items
    slots_base = tiers_base + n_items * n_racks
    lay = layout(
        problem,
        bounds.group_lower is not None,
        bounds.class_lower is not None,
        dense_nodes=n_items * (n_racks + n_clients),
    )
    supplies = np.zeros(lay.sink + 1, dtype=np.int64)
    supplies[:n_items] = problem.supply
    supplies[lay.sink] = -int(problem.supply.sum())
    graph = Graph([], [], [], [])
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
    zero_cost_arcs(
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
    slot_arcs = zero_cost_arcs(
        graph, slots_base + items * n_clients + clients, lay.exit(problem.item_group[items], clients), 1
    )
    add_balance(graph, lay, bounds, supplies)
    flows = run(graph, supplies)
    if flows is None:
        return None
    placed: list[list[int]] = [[] for _ in range(n_items)]
    taken = flows[slot_arcs] > 0
    for item, client in zip(items[taken].tolist(), clients[taken].tolist(), strict=True):
        placed[item].append(client)
    return placed
