"""What may be published now: actives only where they can process at once, warmups toward the target.

KIP-441's iterative balancing: an active stateful task moves to its target client only once that client is
caught up; until then it stays on (or goes to) the most caught-up client and the target client restores it
as a warmup, at most maxWarmupReplicas at once. A warmup already restoring keeps its slot while its client
stays in the target (the drafts' "keep the existing learner tasks running"); the free slots serve leaving
pods' tasks first. Leaving pods (the incremental-rebalancing drafts) keep the
actives they have until a pod that stays is caught up, or until their scale-down timeout expires; they get
nothing new. Stateless tasks have nothing to restore and go straight to their target.

Only clients that reported state for a task are visited (a client without state has the changelog length as
its lag, so one stand-in speaks for all of them): the cost per task does not grow with the cluster.
"""

from __future__ import annotations

from dataclasses import dataclass
from itertools import chain

import numpy as np

from smoothscale.assignor.cluster import NO_CLIENT, UNKNOWN_RACK, Cluster, IntArray
from smoothscale.assignor.models import caught_up
from smoothscale.assignor.target import Target


@dataclass(slots=True)
class Assignment:
    active: IntArray
    standby: list[list[int]]
    warmup: list[list[int]]
    explain: list[str]
    waiting: int = 0  # moves toward the target that wait for a warmup slot


class _Chooser:
    """Per-task choices of the active and the standbys, and the explanation of what is still pending.

    Per-task and per-client facts are taken out of the arrays as Python lists once: the choices visit every
    task one by one, where an array element costs several times a list element.
    """

    def __init__(self, cluster: Cluster, target: Target) -> None:
        self.cluster = cluster
        self.target = target
        self.acceptable = cluster.config.acceptable_recovery_lag
        self.num_standbys = cluster.config.num_standbys
        self.names = cluster.client_ids
        self.stateful: list[bool] = cluster.stateful.tolist()
        self.leaving: list[bool] = cluster.leaving.tolist()
        self.expired: list[bool] = cluster.expired.tolist()
        self.rack: list[int] = cluster.client_rack.tolist()
        self.rack_known: list[bool] = cluster.rack_known_mask().tolist()
        self.non_leaving: list[int] = cluster.non_leaving().tolist()
        self.goal: list[int] = target.active.tolist()
        self.owner: list[int] = cluster.current_active.tolist()
        self.changelog: list[int] = cluster.changelog.tolist()
        self.unknown_inputs: list[bool] = cluster.unknown_inputs.tolist()
        self.missing: list[list[int]] = cluster.missing_partitions.tolist()
        self.unknown_racks = {r for r, name in enumerate(cluster.racks) if name == UNKNOWN_RACK}

    def lag(self, task: int, client: int) -> int:
        """A client's lag on a task; no reported state counts as the whole changelog behind (KIP-441)."""
        return self.cluster.reported_lags[task].get(client, self.changelog[task])

    def rank(self, task: int, client: int) -> int:
        lag = self.lag(task, client)
        return 0 if lag <= self.acceptable else lag

    def _stand_in(self, task: int) -> int | None:
        """A staying client without reported state: it speaks for every such client."""
        reported = self.cluster.reported_lags[task]
        goal = self.goal[task]
        if goal not in reported:
            return goal
        return next((c for c in self.non_leaving if c not in reported), None)

    def choose_active(self, task: int) -> tuple[int, str]:
        goal, owner = self.goal[task], self.owner[task]
        if not self.stateful[task]:
            return goal, self._moved("stateless", owner, goal)
        reported = self.cluster.reported_lags[task]
        goal_lag = reported.get(goal, self.changelog[task])
        if goal_lag <= self.acceptable:
            return goal, self._moved(f"caught up (lag {goal_lag})", owner, goal)
        owner_may_keep = owner != NO_CLIENT and not (self.leaving[owner] and self.expired[owner])
        staying_caught_up = [
            c for c, lag in reported.items() if lag <= self.acceptable and not self.leaving[c]
        ]
        if owner_may_keep and self.rank(task, owner) == 0:
            if not self.leaving[owner]:
                return owner, f"kept on {self.names[owner]}: caught up"
            if not staying_caught_up:
                return owner, f"kept on leaving {self.names[owner]}: no staying pod caught up yet"
        if staying_caught_up:
            standbys = self.target.standby[task]
            pick = min(staying_caught_up, key=lambda c: (c not in standbys, c))
            return pick, self._moved(self._caught_up(task, pick), owner, pick)
        # Nobody is caught up: the most caught-up client, keeping the owner (then the target) on a tie.
        ranks = {c: lag for c, lag in reported.items() if not self.leaving[c]}
        if owner_may_keep:
            ranks[owner] = self.rank(task, owner)
        stand_in = self._stand_in(task)
        if stand_in is not None:
            ranks[stand_in] = self.changelog[task]
        best = min(ranks.values())
        pick = next(c for c in (owner, goal, *sorted(ranks)) if ranks.get(c) == best)
        reason = f"nobody caught up, most caught up (lag {self.lag(task, pick)})"
        if owner != NO_CLIENT and self.expired[owner]:
            reason = f"scale-down timeout of {self.names[owner]} expired; {reason}"
        return pick, self._moved(reason, owner, pick)

    def choose_standbys(self, task: int, active: int) -> list[int]:
        """Rule 4: the most caught-up staying clients, preferring the target's clients, then other racks."""
        staying_others = len(self.non_leaving) - (0 if self.leaving[active] else 1)
        wanted = min(self.num_standbys, staying_others)
        if wanted <= 0:
            return []
        reported, behind, acceptable = self.cluster.reported_lags[task], self.changelog[task], self.acceptable
        targets = self.target.standby[task]
        if (
            len(targets) == wanted
            and active not in targets
            and all(caught_up(reported.get(c, behind), acceptable) for c in targets)
        ):
            return list(targets)
        in_target = {self.goal[task], *targets}
        current = self.cluster.current_standby[task]
        leaving = self.leaving
        pool = {c for c in chain(reported, current) if not leaving[c]}
        pool.update(in_target)
        pool.discard(active)
        chosen: list[int] = []
        # A pod of unknown zone is never certainly another rack: it ranks as if its rack were used.
        used_racks = {self.rack[active], *self.unknown_racks}

        def preference(client: int) -> tuple[int, bool, bool, bool, int]:
            lag = reported.get(client, behind)
            return (
                0 if caught_up(lag, acceptable) else lag,
                client not in in_target,
                self.rack[client] in used_racks,
                client not in current,
                client,
            )

        while len(chosen) < wanted:
            if not pool:
                pool = {c for c in self.non_leaving if c != active and c not in chosen}
            pick = min(pool, key=preference)
            pool.discard(pick)
            chosen.append(pick)
            used_racks.add(self.rack[pick])
        return sorted(chosen)

    def _caught_up(self, task: int, client: int) -> str:
        return f"caught up (lag {self.lag(task, client)})"

    def _moved(self, reason: str, owner: int, client: int) -> str:
        if owner == client:
            return f"kept on {self.names[client]}: {reason}"
        if owner == NO_CLIENT:
            return f"placed on {self.names[client]}: {reason}"
        return f"moved from {self.names[owner]} to {self.names[client]}: {reason}"

    def pending_note(self, task: int, active: int, standby: list[int], warmup: list[int]) -> str:
        """What the task still waits for, and how its active reads its input."""
        goal = self.goal[task]
        notes = []
        if goal != active:
            how = (
                "warmup"
                if goal in warmup
                else "standby restoring"
                if goal in standby
                else "waiting for a warmup slot"
            )
            notes.append(f"moves to {self.names[goal]} once caught up ({how}, lag {self.lag(task, goal)})")
        missing = [c for c in self.target.standby[task] if c not in standby]
        if missing:
            notes.append("standby moves to " + ", ".join(self.names[c] for c in missing) + " once caught up")
        traffic = self.missing[task][self.rack[active]]
        if not self.rack_known[active]:
            notes.append(f"rack unknown for {self.names[active]}: rack awareness off for it")
        elif self.unknown_inputs[task] and not traffic:
            notes.append("racks of some input partitions unknown: rack awareness off for them")
        else:
            notes.append("input read across racks" if traffic else "same rack as its input")
        return "; " + "; ".join(notes)


def plan_movements(cluster: Cluster, target: Target) -> Assignment:
    chooser = _Chooser(cluster, target)
    n_tasks = cluster.n_tasks
    active = [NO_CLIENT] * n_tasks
    standby: list[list[int]] = [[] for _ in range(n_tasks)]
    explain: list[str] = [""] * n_tasks
    stateful = chooser.stateful
    wanted: list[tuple[int, int, int, int, int, int]] = []
    for task in range(n_tasks):
        active[task], explain[task] = chooser.choose_active(task)
        if not stateful[task]:
            continue
        standby[task] = chooser.choose_standbys(task, active[task])
        owner_staying = 0 if chooser.leaving[active[task]] else 1
        existing = cluster.current_warmup[task]
        moves = [(0, chooser.goal[task])] + [(1, c) for c in target.standby[task]]
        for kind, client in moves:
            if client != active[task] and client not in standby[task]:
                is_new = 0 if client in existing else 1
                lag = chooser.lag(task, client)
                # Learners in flight first (the drafts: no half-way bounce), then a leaving pod's tasks.
                wanted.append((is_new, owner_staying, kind, lag, task, client))
    wanted.sort()
    cap = cluster.config.max_warmup_replicas
    warmup: list[list[int]] = [[] for _ in range(n_tasks)]
    for *_, task, client in wanted[:cap]:
        warmup[task].append(client)
    for task in range(n_tasks):
        warmup[task].sort()
        explain[task] += chooser.pending_note(task, active[task], standby[task], warmup[task])
    return Assignment(
        np.array(active, dtype=np.int64), standby, warmup, explain, waiting=max(0, len(wanted) - cap)
    )
