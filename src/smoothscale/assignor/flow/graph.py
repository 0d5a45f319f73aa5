"""Arcs as arrays, lower-bounded arcs, and one OR-Tools min-cost flow solve over them."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from ortools.graph.python import min_cost_flow

from smoothscale.assignor.cluster import IntArray


@dataclass(slots=True)
class Graph:
    """Arcs collected as arrays, handed to OR-Tools in one call (per-arc calls dominate at scale)."""

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


def run(graph: Graph, supplies: IntArray) -> IntArray | None:
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


def zero_cost_arcs(graph: Graph, tails: IntArray, heads: IntArray, capacity: int) -> IntArray:
    """Arcs that cost nothing, all with the same capacity; returns their indices."""
    count = len(tails)
    return graph.add(tails, heads, np.full(count, capacity), np.zeros(count, dtype=np.int64))


def lower_bounded(
    graph: Graph, supplies: IntArray, tails: IntArray, heads: IntArray, lower: IntArray, upper: IntArray
) -> None:
    """Arcs with flow in [lower, upper]: the lower part is pre-routed by moving it into the supplies."""
    lower, upper = lower.reshape(-1), upper.reshape(-1)
    graph.add(tails, heads, upper - lower, np.zeros(len(tails), dtype=np.int64))
    np.subtract.at(supplies, tails, lower)
    np.add.at(supplies, heads, lower)
