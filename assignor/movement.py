"""What may be published now: actives only where they can process at once, warmups toward the target.

KIP-441's iterative balancing: an active stateful task moves to its target client only once that client is
caught up; until then it stays on (or goes to) the most caught-up client and the target client restores it
as a warmup, at most maxWarmupReplicas at once. Leaving pods (the incremental-rebalancing drafts) keep the
actives they have until a pod that stays is caught up, or until their scale-down timeout expires; they get
nothing new. Stateless tasks have nothing to restore and go straight to their target.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from smoothscale.assignor.cluster import NO_CLIENT, Cluster, IntArray
from smoothscale.assignor.target import Target


@dataclass(slots=True)
class Assignment:
    active: IntArray
    standby: list[list[int]]
    warmup: list[list[int]]
    explain: list[str]
    waiting: int = 0  # moves toward the target that wait for a warmup slot
    notes: list[str] = field(default_factory=list)


@dataclass(frozen=True, slots=True)
class _Candidate:
    """A client considered for a task's active, with what the choice depends on."""

    client: int
    rank: int
    leaving: bool


class _Chooser:
    """Per-task choices; only clients that reported state are visited, so cost is independent of size."""

    def __init__(self, cluster: Cluster, target: Target) -> None:
        self.cluster = cluster
        self.target = target
        self.non_leaving = cluster.non_leaving()
        self.non_leaving_set = set(self.non_leaving.tolist())

    def candidates(self, task: int) -> list[_Candidate]:
        """Clients with state for the task, the target client, and the owner if it may keep it.

        Clients without state all share the changelog-length rank; the target client (or, when it has
        reported state, the first stateless staying client) stands in for them.
        """
        cluster = self.cluster
        owner = int(cluster.current_active[task])
        reported = cluster.reported_lags[task]
        seen = set(reported) | {int(self.target.active[task])}
        if owner != NO_CLIENT:
            seen.add(owner)
        if int(self.target.active[task]) in reported:
            stand_in = next((int(c) for c in self.non_leaving if int(c) not in reported), None)
            if stand_in is not None:
                seen.add(stand_in)
        result = []
        for client in sorted(seen):
            leaving = bool(cluster.leaving[client])
            if leaving and (client != owner or cluster.expired[client]):
                continue
            result.append(_Candidate(client, cluster.rank(task, client), leaving))
        return result

    def choose_active(self, task: int) -> tuple[int, str]:
        cluster = self.cluster
        goal = int(self.target.active[task])
        owner = int(cluster.current_active[task])
        if not cluster.stateful[task]:
            return goal, _moved("stateless", owner, goal, cluster)
        candidates = self.candidates(task)
        by_client = {c.client: c for c in candidates}
        if by_client[goal].rank == 0:
            return goal, _moved(_lag_note(cluster, task, goal), owner, goal, cluster)
        caught_up = [c for c in candidates if c.rank == 0]
        staying = [c for c in caught_up if not c.leaving]
        if (
            owner in by_client
            and by_client[owner].rank == 0
            and (not by_client[owner].leaving or not staying)
        ):
            note = "leaving, no staying pod caught up yet" if by_client[owner].leaving else "caught up"
            return owner, f"kept on {_name(cluster, owner)}: {note}"
        if caught_up:
            pick = min(
                caught_up, key=lambda c: (c.leaving, self._not_target_standby(task, c.client), c.client)
            )
            return pick.client, _moved(_lag_note(cluster, task, pick.client), owner, pick.client, cluster)
        # Nobody is caught up: the most caught-up client, keeping the owner (then the target) on a tie.
        best = min(c.rank for c in candidates)
        tied = [c.client for c in candidates if c.rank == best]
        pick_client = owner if owner in tied else goal if goal in tied else tied[0]
        reason = f"nobody caught up, most caught up (lag {cluster.lag(task, pick_client)})"
        if owner != NO_CLIENT and cluster.expired[owner]:
            reason = f"scale-down timeout of {_name(cluster, owner)} expired; {reason}"
        return pick_client, _moved(reason, owner, pick_client, cluster)

    def _not_target_standby(self, task: int, client: int) -> bool:
        return client not in self.target.standby[task]

    def _outside_target(self, task: int, client: int) -> bool:
        """A copy outside the target would be dropped later: a standby placed in it is wasted restoring."""
        return client != self.target.active[task] and client not in self.target.standby[task]

    def choose_standbys(self, task: int, active: int) -> list[int]:
        """Rule 4: the most caught-up staying clients, preferring the target's clients, then other racks."""
        cluster = self.cluster
        wanted = min(cluster.config.num_standbys, len(self.non_leaving) - (active in self.non_leaving_set))
        if wanted <= 0:
            return []
        pool = {c for c in cluster.reported_lags[task] if c in self.non_leaving_set}
        pool.update(self.target.standby[task])
        pool.add(int(self.target.active[task]))
        pool.update(c for c in cluster.current_standby[task] if c in self.non_leaving_set)
        pool.discard(active)
        chosen: list[int] = []
        used_racks = {int(cluster.client_rack[active])}
        while len(chosen) < wanted:
            if not pool:
                pool = {int(c) for c in self.non_leaving if c != active and c not in chosen}
            pick = min(
                pool,
                key=lambda c: (
                    cluster.rank(task, c),
                    self._outside_target(task, c),
                    int(cluster.client_rack[c]) in used_racks,
                    c not in cluster.current_standby[task],
                    c,
                ),
            )
            pool.discard(pick)
            chosen.append(pick)
            used_racks.add(int(cluster.client_rack[pick]))
        return sorted(chosen)


def _name(cluster: Cluster, client: int) -> str:
    return str(cluster.client_ids[client])


def _lag_note(cluster: Cluster, task: int, client: int) -> str:
    return f"caught up (lag {cluster.lag(task, client)})"


def _moved(reason: str, owner: int, client: int, cluster: Cluster) -> str:
    if owner == client:
        return f"kept on {_name(cluster, client)}: {reason}"
    if owner == NO_CLIENT:
        return f"placed on {_name(cluster, client)}: {reason}"
    return f"moved from {_name(cluster, owner)} to {_name(cluster, client)}: {reason}"


def plan_movements(cluster: Cluster, target: Target) -> Assignment:
    chooser = _Chooser(cluster, target)
    n_tasks = cluster.n_tasks
    active = np.full(n_tasks, NO_CLIENT, dtype=np.int64)
    standby: list[list[int]] = [[] for _ in range(n_tasks)]
    explain: list[str] = [""] * n_tasks
    wanted: list[tuple[tuple[int, int, int, int, int, int], int, int]] = []
    for task in range(n_tasks):
        active[task], explain[task] = chooser.choose_active(task)
        if not cluster.stateful[task]:
            continue
        standby[task] = chooser.choose_standbys(task, int(active[task]))
        owner_leaving = int(cluster.leaving[int(active[task])])
        existing = cluster.current_warmup[task]
        moves = [(0, int(target.active[task]))] + [(1, c) for c in target.standby[task]]
        for kind, client in moves:
            if client == active[task] or client in standby[task]:
                continue
            priority = (
                1 - owner_leaving,
                0 if client in existing else 1,
                kind,
                cluster.lag(task, client),
                task,
                client,
            )
            wanted.append((priority, task, client))
    wanted.sort()
    cap = cluster.config.max_warmup_replicas
    warmup: list[list[int]] = [[] for _ in range(n_tasks)]
    for _, task, client in wanted[:cap]:
        warmup[task].append(client)
    for task in range(n_tasks):
        warmup[task].sort()
        explain[task] += _pending_note(cluster, target, task, int(active[task]), standby[task], warmup[task])
    return Assignment(active, standby, warmup, explain, waiting=max(0, len(wanted) - cap))


def _pending_note(
    cluster: Cluster, target: Target, task: int, active: int, standby: list[int], warmup: list[int]
) -> str:
    goal = int(target.active[task])
    notes = []
    if goal != active:
        how = (
            "warmup"
            if goal in warmup
            else ("standby restoring" if goal in standby else "waiting for a warmup slot")
        )
        notes.append(f"moves to {_name(cluster, goal)} once caught up ({how}, lag {cluster.lag(task, goal)})")
    missing = [c for c in target.standby[task] if c not in standby]
    if missing:
        notes.append("standby moves to " + ", ".join(_name(cluster, c) for c in missing) + " once caught up")
    traffic = int(cluster.missing_partitions[task, cluster.client_rack[active]])
    notes.append("input read across racks" if traffic else "same rack as its input")
    return "; " + "; ".join(notes) if notes else ""
