"""Which copy that entered a rack goes to which of the rack's clients, honouring exclusions exactly."""

from __future__ import annotations

import numpy as np
from ortools.graph.python import min_cost_flow

from smoothscale.assignor.cluster import IntArray


def fill_rack(
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
