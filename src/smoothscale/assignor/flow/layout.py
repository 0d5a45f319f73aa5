"""Node numbering of the placement graph, and the balance arcs that lead every client to the sink."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from smoothscale.assignor.cluster import IntArray
from smoothscale.assignor.flow.graph import Graph, lower_bounded
from smoothscale.assignor.flow.problem import NO_EXCLUSION, Bounds, PlacementProblem


@dataclass(frozen=True, slots=True)
class Layout:
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


def layout(problem: PlacementProblem, grouped: bool, classed: bool, dense_nodes: int = 0) -> Layout:
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
    return Layout(
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


def add_balance(graph: Graph, lay: Layout, bounds: Bounds, supplies: IntArray) -> None:
    """Lower-bounded arcs group-client -> class-client -> client -> sink, lower bounds moved to supplies."""
    clients = np.arange(lay.n_clients, dtype=np.int64)
    if lay.grouped:
        assert bounds.group_lower is not None and bounds.group_upper is not None
        groups = np.repeat(np.arange(lay.n_groups), lay.n_clients)
        members = np.tile(clients, lay.n_groups)
        tails = lay.exit(groups, members)
        heads = lay.class_exit(groups, members)
        lower_bounded(graph, supplies, tails, heads, bounds.group_lower, bounds.group_upper)
    if lay.group_class is not None:
        assert bounds.class_lower is not None and bounds.class_upper is not None
        n_classes = int(lay.group_class.max()) + 1
        tails = lay.class_client_base + np.arange(n_classes * lay.n_clients)
        heads = lay.client_base + np.tile(clients, n_classes)
        lower_bounded(graph, supplies, tails, heads, bounds.class_lower, bounds.class_upper)
    sinks = np.full(lay.n_clients, lay.sink)
    lower_bounded(graph, supplies, lay.client_base + clients, sinks, bounds.client_lower, bounds.client_upper)
