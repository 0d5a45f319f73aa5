"""A migration's progress and its estimated completion time (ETA), as pure functions of what rounds observe.

A migration is the time during which tasks move: warmup copies restoring state before their task moves
(`published` warmups), moves the last plan's target still calls for that wait behind the warmup cap
(`maxWarmupReplicas`: the planner publishes at most that many warmups at once and queues the rest, smallest
lag first), and revocations not yet acknowledged. Kafka Streams leaves restore progress to a listener the
app writes itself; the operator already sees every warming copy's lag each round, so it can measure how fast
each pod restores and project the queue forward.

The estimate, from one round to the next (`RestoreMeter`, an immutable value in the round's memory):

- each pod's *catch-up rate* per warming copy: how fast its warmups' lags fall (records/s; the changelog's
  growth already taken off), an exponentially weighted mean over `TIME_CONSTANT_SECONDS`, weighted by time
  as rounds come irregularly. Only an interval all through which a copy restored gives a sample: its lag
  fell in the interval before too, and it is not caught up yet. A copy whose pod has not started restoring
  it, that started within the interval or caught up within it would read as a slower pod (on real Kafka
  Streams, restoring 300,000 records in two or three seconds, the first interval's half-fall held every
  rate at a third of the true one for the whole migration: ETAs twice too far);
- the *start-up time* of a warmup: slot-seconds a warmup slot that had work stood without a copy restoring
  in it (a new warmup's pod not restoring yet, a caught-up copy waiting for its move) per warmup started,
  less the half round interval such a slot waits on average for the round that sees the copy caught up;
- then a small queue model (`estimate`): the copies in flight finish at their pod's rate; the round after a
  slot frees (rounds come every `interval`) publishes the next queued move into it, which then takes the
  start-up time and its size at its target pod's rate (the app's mean rate for a pod not measured yet). The
  ETA is the round after the last copy finishes, which moves its task. Each warming copy's own ETA is its
  lag at its pod's rate.

`benchmarks/eta_bench.py` measures the estimate against the actual end of every migration of the
simulator's scenario library and of the demo on real Kafka Streams.

Until some copy has been seen restoring there is no rate, so no ETA (the progress is still reported).
Rates live in memory only: a restarted operator measures again, which costs the ETA for a round or two.
"""

from __future__ import annotations

import heapq
import math
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta
from typing import Final

from smoothscale.assignor.models import Plan, caught_up
from smoothscale.contract.publication import Publication

TIME_CONSTANT_SECONDS: Final = 10.0
"""Of the catch-up rates' means: a warmup's restore lasts seconds (a demo) to minutes (gigabytes)."""

Copy = tuple[str, str]
"""(task, pod): one warming copy."""


@dataclass(frozen=True)
class Move:
    """One copy a migration still has to restore: a warmup in flight, or a move queued behind the cap."""

    task: str
    pod: str
    records: int
    """Records left to restore: the pod's reported lag, or the whole changelog when it reports none."""


@dataclass(frozen=True)
class Work:
    """What is left of a migration at one round (`remaining_work`)."""

    warming: tuple[Move, ...] = ()
    queued: tuple[Move, ...] = ()
    """In the order the planner takes them (smallest lag first)."""
    restoring: tuple[Move, ...] = ()
    """Active copies more than `caught_up` behind: they restore before they process, outside the warmup
    slots (a task moved at a leaving pod's scale-down timeout, a pod restarted without its state)."""
    revoking: int = 0
    cap: int = 1
    caught_up: int = 0
    """The lag within which a copy counts as caught up (`acceptableRecoveryLag`): the move follows."""

    @property
    def active(self) -> bool:
        return bool(self.warming or self.queued or self.restoring or self.revoking)

    @property
    def records_left(self) -> int:
        return sum(m.records for moves in (self.warming, self.queued, self.restoring) for m in moves)

    @property
    def pods(self) -> frozenset[str]:
        """The pods a copy is restoring on, or queued for: their lags decide when the migration goes on."""
        return frozenset(m.pod for moves in (self.warming, self.queued, self.restoring) for m in moves)


@dataclass(frozen=True)
class CopyEstimate:
    task: str
    pod: str
    records_left: int
    rate: float | None
    """Records/s this copy catches up by (its pod's measured rate); None: not measured yet."""
    eta: datetime | None


@dataclass(frozen=True)
class Progress:
    """A migration's progress at one round: what status, the metrics and `smoothscale status` show."""

    started: datetime
    warming: tuple[CopyEstimate, ...]
    queued: int
    restoring: int
    """Active copies restoring before they process."""
    revoking: int
    records_restored: int
    records_left: int
    eta: datetime | None
    first_eta: datetime | None
    """The first ETA this migration got: what it promised (`SmoothscaleMigrationPastETA` alerts on it)."""

    @property
    def percent(self) -> float:
        total = self.records_restored + self.records_left
        return 100.0 if total == 0 else round(100.0 * self.records_restored / total, 1)


@dataclass(frozen=True)
class RestoreMeter:
    """What the estimate remembers between rounds: one immutable value."""

    rates: Mapping[str, float] = field(default_factory=dict)
    """Each pod's catch-up rate per warming copy (records/s), kept across migrations while the pod lives."""
    rated_at: Mapping[str, datetime] = field(default_factory=dict)
    started: datetime | None = None
    """When the current migration began (None: none runs)."""
    last: datetime | None = None
    seen: Mapping[Copy, int] = field(default_factory=dict)
    """Each warming copy's lag at the last round."""
    falling: frozenset[Copy] = frozenset()
    """The copies whose lag fell from the round before the last to the last: restoring all through the
    interval that follows, so that its fall is a rate sample."""
    restored: float = 0.0
    idle: float = 0.0
    """Slot-seconds no copy restored in a slot that had work to do."""
    starts: int = 0
    """Warmups started in this migration."""
    first_eta: datetime | None = None

    def observe(self, work: Work, now: datetime, pods: Collection[str]) -> RestoreMeter:
        """This meter after one round that found `work` left (`pods`: the pods that exist)."""
        if not work.active:
            if self.started is None and set(self.rates) <= set(pods):
                return self
            return RestoreMeter(
                rates={p: r for p, r in self.rates.items() if p in pods},
                rated_at={p: t for p, t in self.rated_at.items() if p in pods},
            )
        slotted = {(m.task, m.pod) for m in work.warming}
        lags = {(m.task, m.pod): m.records for moves in (work.warming, work.restoring) for m in moves}
        if self.started is None or self.last is None:
            return replace(self, started=now, last=now, seen=lags, starts=len(slotted))
        dt = (now - self.last).total_seconds()
        if dt <= 0:
            return self
        fallen: dict[str, list[float]] = {}
        falling: set[Copy] = set()
        restored = self.restored
        restoring = 0.0
        for copy, lag in lags.items():
            before = self.seen.get(copy)
            if before is None:
                continue
            if lag >= before:
                continue  # not restoring (yet, or any more): its slot is idle, which is no rate of 0
            restored += before - lag
            falling.add(copy)
            if caught_up(lag, work.caught_up):
                restoring += 0.5 * (copy in slotted)  # caught up within the interval: no rate from a part
            else:
                if copy in self.falling:  # else it began within the interval: no rate from a part either
                    fallen.setdefault(copy[1], []).append(before - lag)
                restoring += copy in slotted
        for copy, before in self.seen.items():
            if copy not in lags:  # caught up and moved (its last lag was within the acceptable lag)
                restored += before
                restoring += 0.5  # it restored for part of the interval, on average half
        rates, rated_at = dict(self.rates), dict(self.rated_at)
        for pod, drops in fallen.items():
            sample = sum(drops) / len(drops) / dt
            last = rated_at.get(pod)
            keep = 0.0 if last is None else math.exp(-(now - last).total_seconds() / TIME_CONSTANT_SECONDS)
            rates[pod] = keep * rates.get(pod, 0.0) + (1 - keep) * sample
            rated_at[pod] = now
        busy = min(work.cap, len(work.warming) + len(work.queued))
        return replace(
            self,
            rates=rates,
            rated_at=rated_at,
            last=now,
            seen=lags,
            falling=frozenset(falling),
            restored=restored,
            idle=self.idle + max(busy - restoring, 0) * dt,
            starts=self.starts + sum(1 for copy in slotted if copy not in self.seen),
        )

    def estimate(self, work: Work, now: datetime, interval: float = 0.0) -> Progress | None:
        """The migration's progress and ETA after `observe` (None: no migration runs)."""
        if self.started is None:
            return None
        mean = _mean([r for r in self.rates.values() if r > 0])
        warming = tuple(
            CopyEstimate(m.task, m.pod, m.records, rate, _after(now, m.records, rate))
            for m in work.warming
            for rate in [self._rate(m.pod, mean)]
        )
        eta = self._finish(work, now, mean, interval)
        return Progress(
            started=self.started,
            warming=warming,
            queued=len(work.queued),
            restoring=len(work.restoring),
            revoking=work.revoking,
            records_restored=round(self.restored),
            records_left=work.records_left,
            eta=eta,
            first_eta=self.first_eta or eta,
        )

    def promised(self, progress: Progress | None) -> RestoreMeter:
        """This meter with the migration's first ETA kept (once it has one)."""
        if progress is None or self.first_eta is not None or progress.eta is None:
            return self
        return replace(self, first_eta=progress.eta)

    def _rate(self, pod: str, mean: float | None) -> float | None:
        rate = self.rates.get(pod)
        return rate if rate is not None and rate > 0 else mean

    def _finish(self, work: Work, now: datetime, mean: float | None, interval: float) -> datetime | None:
        """When the last copy has finished and the round after it has moved its task: the queue model of the
        module's docstring (None: no rate yet)."""
        if not work.warming and not work.queued and not work.restoring:
            return now
        startup = max(self.idle / self.starts - interval / 2, 0.0) if self.starts else 0.0
        slots: list[float] = []
        for move in work.warming:
            rate = self._rate(move.pod, mean)
            if rate is None:
                return None
            slots.append(move.records / rate)
        slots += [0.0] * max(work.cap - len(slots), 0)
        heapq.heapify(slots)
        finish = max(slots, default=0.0)
        for move in work.restoring:
            rate = self._rate(move.pod, mean)
            if rate is None:
                return None
            finish = max(finish, move.records / rate)
        for move in work.queued:
            rate = self._rate(move.pod, mean)
            if rate is None:
                return None
            done = _next_round(heapq.heappop(slots), interval) + startup + move.records / rate
            heapq.heappush(slots, done)
            finish = max(finish, done)
        return now + timedelta(seconds=_next_round(finish, interval))


def _next_round(seconds: float, interval: float) -> float:
    """The first round at or after `seconds` from now, rounds coming every `interval` from now: when the
    operator sees that a copy has caught up, and moves its task or starts the next warmup."""
    return math.ceil(seconds / interval - 1e-9) * interval if interval > 0 else seconds


def _mean(values: Sequence[float]) -> float | None:
    return sum(values) / len(values) if values else None


def _after(now: datetime, records: int, rate: float | None) -> datetime | None:
    return None if rate is None else now + timedelta(seconds=records / rate)


def remaining_work(
    plan: Plan | None,
    published: Publication,
    lags: Mapping[str, Mapping[str, int]],
    sizes: Mapping[str, int],
    acceptable_lag: int,
    cap: int,
    leaving: Collection[str] = (),
) -> Work:
    """What is left to move: the published warmups with their pods' lags, the moves toward the last plan's
    target that no warmup serves yet and whose target pod is more than `acceptable_lag` behind, in the
    planner's order (a leaving pod's tasks first, actives before standbys, smallest lag first), and the
    active copies still more than `acceptable_lag` behind."""

    def records(task: str, pod: str) -> int:
        lag = lags.get(pod, {}).get(task)
        return lag if lag is not None else sizes.get(task, 0)

    warming = tuple(
        Move(task, pod, records(task, pod))
        for pod, roles in sorted(published.assignment.items())
        for task in roles.warmup
    )
    queued: list[tuple[int, int, int, str, str]] = []
    if plan is not None and not plan.stable:
        now_serving = {(m.task, m.pod) for m in warming}
        owner = published.active_owner()
        for pod, target in plan.target.items():
            roles = plan.assignment.get(pod)
            placed = set(roles.active) | set(roles.standby) if roles is not None else set()
            for kind, tasks in ((0, target.active), (1, target.standby)):
                for task in tasks:
                    if task in placed or (task, pod) in now_serving:
                        continue
                    behind = records(task, pod)
                    if not caught_up(behind, acceptable_lag):
                        staying = 0 if owner.get(task) in leaving else 1
                        queued.append((staying, kind, behind, task, pod))
    restoring = tuple(
        Move(task, pod, lag)
        for pod, roles in sorted(published.assignment.items())
        for task in roles.active
        if not caught_up(lag := lags.get(pod, {}).get(task, 0), acceptable_lag)
    )
    return Work(
        warming=warming,
        restoring=restoring,
        queued=tuple(Move(task, pod, behind) for _, _, behind, task, pod in sorted(queued)),
        revoking=len(published.revoking),
        cap=max(cap, 1),
        caught_up=acceptable_lag,
    )
