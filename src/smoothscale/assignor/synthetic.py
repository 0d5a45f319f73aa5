"""Seeded synthetic snapshots: the shared workload of benchmarks, property tests and examples.

A realistic mid-migration cluster: a random previous assignment (actives and standbys), every pod reporting
lags for the tasks it holds, caught up on a random half of them and behind on the rest, input partitions
replicated on two of the racks.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from typing import Any

from smoothscale.assignor.models import RackStrategy, Snapshot


@dataclass(frozen=True, slots=True)
class Shape:
    tasks: int
    clients: int
    racks: int = 3
    subtopologies: int = 10
    num_standbys: int = 1
    strategy: RackStrategy = RackStrategy.BALANCE_SUBTOPOLOGY
    changelog_offsets: int = 1_000_000
    acceptable_recovery_lag: int = 10_000
    input_partitions: int = 1  # input partitions per task
    replication: int = 2  # racks holding a replica of each input partition


def random_snapshot_dict(shape: Shape, seed: int) -> dict[str, Any]:
    rng = random.Random(seed)
    racks = [f"zone-{chr(ord('a') + r)}" for r in range(shape.racks)]
    per_sub = max(1, shape.tasks // shape.subtopologies)
    tasks = []
    for i in range(shape.tasks):
        sub, partition = divmod(i, per_sub)
        partitions = [
            rng.sample(racks, k=min(shape.replication, len(racks))) for _ in range(shape.input_partitions)
        ]
        tasks.append(
            {
                "id": f"{sub}_{partition}",
                "subtopology": str(sub),
                "stateful": True,
                "changelogOffsets": shape.changelog_offsets,
                "inputPartitionRacks": partitions,
            }
        )
    clients: list[dict[str, Any]] = [
        {"id": f"pod-{c}", "rack": racks[c % len(racks)], "lags": {}, "active": [], "standby": []}
        for c in range(shape.clients)
    ]
    copies = min(1 + shape.num_standbys, shape.clients)
    for task in tasks:
        holders = rng.sample(range(shape.clients), k=copies)
        clients[holders[0]]["active"].append(task["id"])
        for holder in holders[1:]:
            clients[holder]["standby"].append(task["id"])
        for holder in holders:
            caught_up = rng.random() < 0.5
            lag = (
                rng.randrange(shape.acceptable_recovery_lag + 1)
                if caught_up
                else rng.randrange(shape.acceptable_recovery_lag + 1, shape.changelog_offsets)
            )
            clients[holder]["lags"][task["id"]] = lag
    return {
        "now": "2026-11-21T10:00:00Z",
        "config": {
            "numStandbys": shape.num_standbys,
            "acceptableRecoveryLag": shape.acceptable_recovery_lag,
            "maxWarmupReplicas": 2,
            "rackAware": {"strategy": shape.strategy.value, "trafficCost": 10, "nonOverlapCost": 1},
        },
        "tasks": tasks,
        "clients": clients,
    }


def random_snapshot(shape: Shape, seed: int) -> Snapshot:
    return Snapshot.model_validate(random_snapshot_dict(shape, seed))
