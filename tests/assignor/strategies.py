"""Hypothesis generators of random clusters and perturbations, shared by the property tests.

Clusters are drawn field by field (not from a seed) so that hypothesis can shrink a failure to a small,
readable snapshot. Every generated snapshot is valid input: unique ids, one copy of a task per client, at
most one active client per task, lags only for stateful tasks and never above the changelog, and at least
one client that is not leaving (the planner rejects a cluster where every pod is leaving).
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from hypothesis import strategies as st
from rules import NOW, add_client, make_client, make_snapshot, mark_leaving, remove_client, set_lags

from smoothscale.assignor.models import Snapshot

RACKS = ("zone-a", "zone-b", "zone-c")
STRATEGIES = ("none", "min_traffic", "balance_subtopology")
TIMEOUT = 600.0
LEAVING_AGES = (30.0, TIMEOUT - 1, TIMEOUT, 2 * TIMEOUT)
"""Seconds since a pod was marked leaving: fresh, just before, exactly at and well past the timeout."""


@st.composite
def clusters(
    draw: st.DrawFn,
    max_subtopologies: int = 4,
    max_partitions: int = 12,
    max_clients: int = 10,
) -> Snapshot:
    """A random cluster: 1..4 subtopologies of 1..12 partitions, 1..10 clients over 1..3 racks, a random
    configuration, and (half of the time) a random published assignment with random lags and leaving pods.
    """
    racks = RACKS[: draw(st.integers(1, 3))]
    tasks: list[dict[str, Any]] = []
    for sub in range(draw(st.integers(1, max_subtopologies))):
        stateful = draw(st.booleans())
        offsets = draw(st.sampled_from([0, 50_000, 1_000_000])) if stateful else 0
        for partition in range(draw(st.integers(1, max_partitions))):
            partition_racks = draw(
                st.lists(st.lists(st.sampled_from(RACKS), unique=True, max_size=3), max_size=2)
            )
            tasks.append(
                {
                    "id": f"{sub}_{partition}",
                    "subtopology": str(sub),
                    "stateful": stateful,
                    "changelogOffsets": offsets,
                    "inputPartitionRacks": partition_racks,
                }
            )
    n_clients = draw(st.integers(1, max_clients))
    clients: list[dict[str, Any]] = [
        {
            "id": f"pod-{i}",
            "rack": draw(st.sampled_from(racks)),
            "capacity": draw(st.integers(1, 3)),
            "lags": {},
            "active": [],
            "standby": [],
            "warmup": [],
        }
        for i in range(n_clients)
    ]
    num_standbys = draw(st.integers(0, 2))
    if draw(st.booleans()):
        _draw_published_state(draw, tasks, clients, num_standbys)
    return make_snapshot(
        tasks,
        clients,
        num_standbys=num_standbys,
        max_warmup_replicas=draw(st.integers(1, 3)),
        strategy=draw(st.sampled_from(STRATEGIES)),
        scale_down_timeout_seconds=draw(st.sampled_from([None, TIMEOUT])),
    )


def _draw_published_state(
    draw: st.DrawFn, tasks: list[dict[str, Any]], clients: list[dict[str, Any]], num_standbys: int
) -> None:
    """Fill `clients` in place with a random published assignment, lags, and leaving pods."""
    n = len(clients)
    for task in tasks:
        offsets = task["changelogOffsets"]
        lag_values = st.sampled_from(sorted({0, min(5_000, offsets), min(30_000, offsets), offsets}))
        owner = draw(st.one_of(st.none(), st.integers(0, n - 1)))
        holders: set[int] = set()
        if owner is not None:
            clients[owner]["active"].append(task["id"])
            holders.add(owner)
        if not task["stateful"]:
            continue
        for s in draw(st.lists(st.integers(0, n - 1), unique=True, max_size=num_standbys)):
            if s not in holders:
                clients[s]["standby"].append(task["id"])
                holders.add(s)
        if draw(st.integers(0, 9)) == 0:
            w = draw(st.integers(0, n - 1))
            if w not in holders:
                clients[w]["warmup"].append(task["id"])
                holders.add(w)
        for h in holders:
            clients[h]["lags"][task["id"]] = draw(lag_values)
        if draw(st.integers(0, 4)) == 0:  # old state left on some other pod
            clients[draw(st.integers(0, n - 1))]["lags"].setdefault(task["id"], draw(lag_values))
    leaving = [draw(st.integers(0, 4)) == 0 for _ in clients]
    if all(leaving):
        leaving[0] = False
    for client, is_leaving in zip(clients, leaving, strict=True):
        if is_leaving:
            age = draw(st.sampled_from(LEAVING_AGES))
            client["leavingSince"] = (NOW - timedelta(seconds=age)).isoformat()


Perturbation = tuple[str, int, int, int]
KINDS = ("add", "remove", "leave", "leave_expired", "lag")


def perturbations(max_size: int = 3) -> st.SearchStrategy[list[Perturbation]]:
    """Abstract perturbations (kind, three free integers) resolved against the cluster when applied."""
    return st.lists(
        st.tuples(st.sampled_from(KINDS), st.integers(0, 99), st.integers(0, 99), st.integers(0, 2)),
        min_size=1,
        max_size=max_size,
    )


def apply_perturbation(snapshot: Snapshot, op: Perturbation, serial: int) -> Snapshot:
    """Apply one perturbation; one that would leave no non-leaving client (or has no target) is a no-op.

    - add: a new, empty pod on some rack with capacity 1..3;
    - remove: a pod disappears with everything it held;
    - leave / leave_expired: a pod is marked leaving just now / longer ago than the scale-down timeout;
    - lag: a pod's lag on a stateful task changes (0, just above acceptableRecoveryLag, or a full restore).
    """
    kind, a, b, c = op
    clients = snapshot.clients
    if kind == "add":
        new = make_client(f"pod-new-{serial}", rack=RACKS[a % len(RACKS)], capacity=1 + b % 3)
        return add_client(snapshot, new)
    victim = clients[a % len(clients)]
    staying = [x for x in clients if x.leaving_since is None and x.id != victim.id]
    if kind in {"remove", "leave", "leave_expired"} and not staying:
        return snapshot
    if kind == "remove":
        return remove_client(snapshot, victim.id)
    if kind in {"leave", "leave_expired"}:
        if victim.leaving_since is not None:
            return snapshot
        timeout = snapshot.config.scale_down_timeout_seconds or TIMEOUT
        age = 10.0 if kind == "leave" else 2 * timeout
        return mark_leaving(snapshot, victim.id, snapshot.now - timedelta(seconds=age))
    stateful = [t for t in snapshot.tasks if t.stateful]
    if not stateful:
        return snapshot
    task = stateful[b % len(stateful)]
    just_behind = min(snapshot.config.acceptable_recovery_lag + 1, task.changelog_offsets)
    value = (0, just_behind, task.changelog_offsets)[c]
    return set_lags(snapshot, victim.id, {task.id: value})
