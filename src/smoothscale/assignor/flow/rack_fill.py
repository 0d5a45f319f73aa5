"""Which copy that entered a rack goes to which of the rack's clients: an exact decomposition, or none.

The aggregated flow says how many copies of a group leave at each client of a rack (the slots) and which
items sent how many copies into the rack; it does not say which copy takes which slot. Handing them out is
a 0/1 transportation problem: an item's copies go to distinct clients, never to one it must avoid (the
client its entry excludes, or one where it already has a copy through a direct arc), and every slot is
used, so the per-client counts, and with them every balance bound, hold exactly.

First a greedy pass: items with several copies (or a direct copy here) take the allowed clients with the
most slots left (Ryser's construction, exact when nothing is forbidden); then copies with at most an
excluded client go through a small flow between their exclusion classes and the remaining slots. Should
that fail, an exact matching decides. When even that finds no way, the counts admit no decomposition: the
caller re-solves with the rack's pods as separate nodes for those items (see `solve`).
"""

from __future__ import annotations

import heapq
from collections import Counter
from dataclasses import dataclass

import numpy as np
from ortools.graph.python import min_cost_flow

from smoothscale.assignor.cluster import IntArray
from smoothscale.assignor.flow.problem import NO_EXCLUSION


@dataclass(frozen=True, slots=True)
class RackEntries:
    """The copies of one group that entered one rack through its hub or exclusion nodes."""

    members: IntArray  # the rack's clients, local positions ascending
    slots: IntArray  # per member: copies of the group the flow lets leave there
    items: IntArray  # per copy: its item
    excluded: IntArray  # per copy: the client its entry excludes, or NO_EXCLUSION


def fill_rack(placed: list[list[int]], entries: RackEntries) -> bool:
    """Append each entered copy's client to `placed`; False (and `placed` untouched) when no decomposition
    exists."""
    copies = _Copies.of(placed, entries)
    members: list[int] = entries.members.tolist()
    slots: list[int] = entries.slots.tolist()
    choice = _greedy(copies, members, slots)
    if choice is None:
        choice = _match(copies.special, copies, members, slots)
    if choice is None:
        return False
    for item, client in choice:
        placed[item].append(client)
    return True


@dataclass(frozen=True, slots=True)
class _Copies:
    """Per item: copies entering and the rack's clients it may not take; items split into the special
    ones (several copies here, or a client to avoid besides its exclusion) and single copies by class (the
    one client they avoid, or NO_EXCLUSION)."""

    count: dict[int, int]
    forbidden: dict[int, set[int]]
    special: list[int]
    classes: dict[int, list[int]]

    @staticmethod
    def of(placed: list[list[int]], entries: RackEntries) -> _Copies:
        items: list[int] = entries.items.tolist()
        count = Counter(items)
        members = set(entries.members.tolist())
        forbidden = {item: members.intersection(placed[item]) for item in count}
        for item, excluded in zip(items, entries.excluded.tolist(), strict=True):
            if excluded != NO_EXCLUSION:
                forbidden[item].add(excluded)
        special = sorted(
            (i for i in count if count[i] > 1 or len(forbidden[i]) > 1), key=lambda i: (-count[i], i)
        )
        classes: dict[int, list[int]] = {}
        for item in sorted(count):
            if count[item] == 1 and len(forbidden[item]) <= 1:
                classes.setdefault(next(iter(forbidden[item]), NO_EXCLUSION), []).append(item)
        return _Copies(count, forbidden, special, classes)


def _greedy(copies: _Copies, members: list[int], slots: list[int]) -> list[tuple[int, int]] | None:
    """Special items first, most copies first, each on the allowed clients with the most slots left; then
    the single copies by class onto what is left."""
    left = list(slots)
    position = {c: j for j, c in enumerate(members)}
    heap = [(-n, c) for c, n in zip(members, slots, strict=True) if n > 0]
    heapq.heapify(heap)
    choice: list[tuple[int, int]] = []
    for item in copies.special:
        wanted, forbidden = copies.count[item], copies.forbidden[item]
        taken: list[tuple[int, int]] = []
        skipped: list[tuple[int, int]] = []
        while heap and len(taken) < wanted:
            entry = heapq.heappop(heap)
            (skipped if entry[1] in forbidden else taken).append(entry)
        if len(taken) < wanted:
            return None
        for negative, client in taken:
            choice.append((item, client))
            left[position[client]] -= 1
            if negative + 1 < 0:
                skipped.append((negative + 1, client))
        for entry in skipped:
            heapq.heappush(heap, entry)
    rest = _match([], copies, members, left)
    return None if rest is None else choice + rest


def _match(
    special: list[int], copies: _Copies, members: list[int], slots: list[int]
) -> list[tuple[int, int]] | None:
    """One flow: each of `special` as its own node with arcs of capacity 1 to the clients it may take, each
    class of single copies as one node; a decomposition exists exactly when everything is routed."""
    keys = np.array(sorted(copies.classes), dtype=np.int64)
    open_members = np.array([c for c, n in zip(members, slots, strict=True) if n > 0], dtype=np.int64)
    demand = [copies.count[i] for i in special] + [len(copies.classes[k]) for k in keys.tolist()]
    if sum(demand) != sum(slots):
        return None
    if not special and len(keys) == 1:  # one class (a rack's actives, say): it takes every slot
        excluded = int(keys[0])
        if excluded in open_members.tolist():
            return None
        clients = [c for c, n in zip(members, slots, strict=True) for _ in range(n)]
        return list(zip(copies.classes[excluded], clients, strict=True))
    sources = len(demand)
    tail_parts, head_parts, capacity_parts = [], [], []
    for s, item in enumerate(special):
        allowed = np.flatnonzero(~np.isin(open_members, list(copies.forbidden[item])))
        tail_parts.append(np.full(len(allowed), s, dtype=np.int64))
        head_parts.append(allowed)
        capacity_parts.append(np.ones(len(allowed), dtype=np.int64))
    class_tail = np.repeat(np.arange(len(keys), dtype=np.int64), len(open_members))
    class_head = np.tile(np.arange(len(open_members), dtype=np.int64), len(keys))
    allowed = open_members[class_head] != keys[class_tail]
    tail_parts.append(len(special) + class_tail[allowed])
    head_parts.append(class_head[allowed])
    capacity_parts.append(np.full(int(allowed.sum()), max(demand, default=0), dtype=np.int64))
    tails, heads = np.concatenate(tail_parts), np.concatenate(head_parts)
    solver = min_cost_flow.SimpleMinCostFlow()
    solver.add_arcs_with_capacity_and_unit_cost(
        tails.astype(np.int32),
        (sources + heads).astype(np.int32),
        np.concatenate(capacity_parts),
        np.zeros(len(tails), dtype=np.int64),
    )
    supplies = np.array(demand + [-n for n in slots if n > 0], dtype=np.int64)
    solver.set_nodes_supplies(np.arange(len(supplies), dtype=np.int32), supplies)
    if solver.solve() != solver.OPTIMAL:
        return None
    flows = solver.flows(np.arange(len(tails), dtype=np.int64))
    used = flows > 0
    choice: list[tuple[int, int]] = []
    pending = {k: list(reversed(copies.classes[k])) for k in keys.tolist()}
    for tail, head, flow in zip(
        tails[used].tolist(), heads[used].tolist(), flows[used].tolist(), strict=True
    ):
        client = int(open_members[head])
        if tail < len(special):
            choice.append((special[tail], client))
        else:
            queue = pending[int(keys[tail - len(special)])]
            choice.extend((queue.pop(), client) for _ in range(flow))
    return choice
