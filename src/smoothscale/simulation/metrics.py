"""The figures of a run: downtime, time to balance against its physical lower bound, traffic, churn, skew.

Downtime is measured in task-seconds: a second during which one task is processed by nobody, because its
new owner is still restoring it (`restore`), because the pod the publication makes its owner is down
(`failover`: until its lease or its Kafka session expires and the task starts elsewhere, or the pod comes
back), or because no running pod has it active otherwise (`handover`: between the two generations of a
hand-over). Time to balance runs from an event until the operator is at rest again (see
`Operator.at_rest`) with every task processing; an event with a follow-up (a restart, a zone's return, a
host swap's leaving mark) counts from the event, and only after the follow-up has happened.

The lower bound is physical: the state that must move divided by the restore bandwidth that can move it.
See `lower_bound`.

Cross-zone records are the input records a task processes, and the changelog records a copy restores, on a
pod whose zone holds no replica of the partition read (consumers fetch from a replica in their own zone when
there is one, KIP-392; a changelog is assumed to be placed like its task's input partitions).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass

import numpy as np
from pydantic import BaseModel, ConfigDict
from pydantic.alias_generators import to_camel

from smoothscale.contract.publication import ClientAssignment
from smoothscale.simulation.state import ACTIVE, NONE, BoolArray, Cluster, Pod


class ResultModel(BaseModel):
    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True, frozen=True)


class Bound(ResultModel):
    """A lower bound on the time to move state, and what it is made of."""

    seconds: float
    records: float  # state that must move
    copies: int  # copies that must be restored
    capped_records: float  # of which through warmups (at most maxWarmupReplicas at once)


class EventOutcome(ResultModel):
    index: int
    type: str
    at: float
    balanced_at: float | None  # None: not balanced before the next event or the end
    time_to_balance_seconds: float | None
    lower_bound: Bound | None
    ratio_to_lower_bound: float | None


class TimelineSample(ResultModel):
    t: float
    actives: dict[str, int]  # per running pod, applied
    warmups: dict[str, int]
    input_lag: float  # records waiting to be processed, all tasks
    restore_lag: float  # records assigned copies still have to restore


class SimulationResult(ResultModel):
    scenario: str
    strategy: str
    seed: int
    end_seconds: float
    balanced: bool
    downtime_task_seconds: float
    restore_downtime_task_seconds: float
    handover_downtime_task_seconds: float
    failover_downtime_task_seconds: float  # its published owner down: the lease or session wait
    time_to_balance_seconds: float | None  # first event to the balance after the last one
    lower_bound_seconds: float | None
    ratio_to_lower_bound: float | None
    records_restored: float
    cross_zone_records: float
    generations_published: int
    plans: int
    plans_by_reason: dict[str, int]  # why the operator re-planned
    peak_task_skew: float
    peak_pod_load: float  # the most weight one staying pod ran per unit of capacity (weights default to 1)
    moved_actives: int  # tasks whose active pod at the end is not the one at the start
    events: list[EventOutcome]
    timeline: list[TimelineSample]


@dataclass(frozen=True, slots=True)
class Baseline:
    """The state copies at the instant an event's disruption is complete: where moves start from."""

    at: float
    lags: dict[tuple[int, str], float]  # (task, pod) -> lag, for pods that were running
    staying_caught_up: dict[int, int]  # task -> caught-up copies on running pods that are not leaving
    caught_up_anywhere: frozenset[int]  # tasks with a caught-up copy on some running pod


def baseline(cluster: Cluster, now: float, acceptable_lag: int) -> Baseline:
    copies = cluster.copies
    lags: dict[tuple[int, str], float] = {}
    staying: dict[int, int] = {}
    anywhere: set[int] = set()
    for task, pod, lag in zip(copies.task.tolist(), copies.pod.tolist(), copies.lag.tolist(), strict=True):
        owner = cluster.pods[pod]
        if owner.up:
            lags[task, owner.name] = lag
            if lag <= acceptable_lag:
                anywhere.add(task)
                if owner.leaving_since is None:
                    staying[task] = staying.get(task, 0) + 1
    return Baseline(at=now, lags=lags, staying_caught_up=staying, caught_up_anywhere=frozenset(anywhere))


def lower_bound(
    cluster: Cluster,
    start: Baseline,
    final: Mapping[str, ClientAssignment],
    acceptable_lag: int,
    max_warmups: int,
) -> Bound:
    """Seconds needed at least to get from `start` to the balanced assignment `final` the run ended in.

    What must move: every copy of `final` whose pod was not caught up at the start (a pod that was not
    running then has no state) and that the planner cannot publish before it is caught up. That is an
    active with a caught-up copy elsewhere, and a standby when the task had as many caught-up copies on
    staying pods as `final` keeps: those move through warmups, at most `max_warmups` at once cluster-wide.
    An active with no caught-up copy anywhere restores where it runs (no warmup slot, but nothing processes
    it until it is done). A standby that replaces a lost copy is published at once while it restores, so it
    delays nothing and is left out.

    The restore model's limits are each a bound of their own, and the largest wins: one copy restores at
    most at its pod's per-copy bandwidth; one pod at most at its per-pod bandwidth; warmups at most
    `max_warmups` at a time; everything at most at the receiving pods' summed bandwidth. Changelog growth
    during the move and all detection and hand-over delays are left out, so a ratio of 1 is out of reach.
    """
    tasks = cluster.tasks
    per_pod: dict[str, tuple[Pod, float, int]] = {}
    records = capped = slowest_copy = 0.0
    copies = 0
    for name, held in final.items():
        pod = cluster.pods[cluster.by_name[name]]
        roles = [(task_id, True) for task_id in held.active] + [(task_id, False) for task_id in held.standby]
        for task_id, active in roles:
            t = cluster.task_index[task_id]
            lag = start.lags.get((t, name), float(tasks.size[t]))
            if not tasks.stateful[t] or lag <= acceptable_lag:
                continue
            kept = 1 + len([p for p, a in final.items() if task_id in a.standby])
            through_warmup = (
                t in start.caught_up_anywhere if active else start.staying_caught_up.get(t, 0) >= kept
            )
            if not active and not through_warmup:
                continue  # a replacement standby: published at once, it gates nothing
            copies += 1
            records += lag
            capped += lag if through_warmup else 0.0
            _, before, n = per_pod.get(name, (pod, 0.0, 0))
            per_pod[name] = (pod, before + lag, n + 1)
            slowest_copy = max(slowest_copy, lag / pod.spec.restore_records_per_second_per_copy)
    fastest_copy = max(
        (p.spec.restore_records_per_second_per_copy for p, _, _ in per_pod.values()), default=1.0
    )
    aggregate = sum(
        min(p.spec.restore_records_per_second_per_pod, n * p.spec.restore_records_per_second_per_copy)
        for p, _, n in per_pod.values()
    )
    seconds = max(
        [
            slowest_copy,
            *(r / p.spec.restore_records_per_second_per_pod for p, r, _ in per_pod.values()),
            capped / (max_warmups * fastest_copy),
            records / aggregate if aggregate else 0.0,
        ]
    )
    return Bound(seconds=seconds, records=records, copies=copies, capped_records=capped)


@dataclass(slots=True)
class _OpenEvent:
    index: int
    type: str
    at: float
    follow_ups: int
    start: Baseline | None = None


class Recorder:
    """Integrates the figures over time and tracks each event until the cluster is balanced again."""

    def __init__(
        self,
        cluster: Cluster,
        acceptable_lag: int,
        max_warmups: int,
        owner_down: Callable[[], BoolArray] | None = None,
    ) -> None:
        """`owner_down`: per task, whether the publication in force makes a pod that is down its owner."""
        self.cluster = cluster
        self.owner_down = owner_down
        self.acceptable_lag = acceptable_lag
        self.max_warmups = max_warmups
        self.restore_downtime = 0.0
        self.handover_downtime = 0.0
        self.failover_downtime = 0.0
        self.records_restored = 0.0
        self.cross_zone_records = 0.0
        self.generations = 0
        self.plans_by_reason: dict[str, int] = {}
        self.peak_skew = 0.0
        self.peak_load = 0.0
        self.timeline: list[TimelineSample] = []
        self.outcomes: list[EventOutcome] = []
        self._open: _OpenEvent | None = None

    def integrate(self, seconds: float) -> None:
        """Account `seconds` at the cluster's current rates (called before the state advances)."""
        if seconds <= 0:
            return
        cluster = self.cluster
        rates, copies, tasks = cluster.rates(), cluster.copies, cluster.tasks
        idle = ~rates.processing
        restoring_active = rates.owner >= 0
        self.restore_downtime += float(np.count_nonzero(idle & restoring_active)) * seconds
        ownerless = idle & ~restoring_active
        if self.owner_down is not None:
            waiting = ownerless & self.owner_down()
            self.failover_downtime += float(np.count_nonzero(waiting)) * seconds
            ownerless &= ~waiting
        self.handover_downtime += float(np.count_nonzero(ownerless)) * seconds
        zone = cluster.pod_arrays().zone
        restored = rates.restore_rate * seconds
        self.records_restored += float(restored.sum())
        remote_restore = tasks.remote[copies.task, zone[copies.pod]]
        processed = np.flatnonzero(rates.processing)
        remote_input = tasks.remote[processed, zone[rates.owner[processed]]]
        self.cross_zone_records += float(restored @ remote_restore) + float(
            rates.throughput[processed] @ remote_input * seconds
        )

    def skew(self) -> None:
        """Track the peak skew between running, staying pods (applied actives per unit of capacity) and the
        peak load of one (the sum of its applied actives' weights per unit of capacity)."""
        cluster = self.cluster
        staying = [p for p in cluster.up() if p.leaving_since is None]
        if not staying:
            return
        counts = [len(p.applied.active) / p.spec.capacity for p in staying]
        self.peak_skew = max(self.peak_skew, max(counts) - min(counts))
        copies = cluster.copies
        active = copies.role == ACTIVE
        weights = cluster.tasks.weight[copies.task[active]]
        load = np.bincount(copies.pod[active], weights=weights, minlength=len(cluster.pods))
        peak = max(load[cluster.index(p)] / p.spec.capacity for p in staying)
        self.peak_load = max(self.peak_load, float(peak))

    def sample(self, now: float) -> None:
        """A timeline point: applied actives and warmups per running pod, total input and restore lag."""
        cluster = self.cluster
        running = cluster.up()
        copies = cluster.copies
        assigned = cluster.pod_arrays().up[copies.pod] & (copies.role != NONE)
        self.timeline.append(
            TimelineSample(
                t=now,
                actives={p.name: len(p.applied.active) for p in running},
                warmups={p.name: len(p.applied.warmup) for p in running},
                input_lag=float(cluster.tasks.backlog.sum()),
                restore_lag=float(copies.lag[assigned].sum()),
            )
        )

    # -- events ------------------------------------------------------------------------------------

    def event(self, index: int, type_: str, now: float, follow_ups: int) -> None:
        """A scenario event happened; the previous one, if still unbalanced, stays so."""
        self._close(None, {})
        self._open = _OpenEvent(index=index, type=type_, at=now, follow_ups=follow_ups)
        if not follow_ups:
            self._open.start = baseline(self.cluster, now, self.acceptable_lag)

    def follow_up_done(self, index: int, now: float) -> None:
        """A follow-up of event `index` happened; after its event's last one, moves start from here."""
        event = self._open
        if event is None or event.index != index:
            return  # its event was already cut short by a later one
        event.follow_ups -= 1
        if not event.follow_ups:
            event.start = baseline(self.cluster, now, self.acceptable_lag)

    def balanced(self, now: float, final: Mapping[str, ClientAssignment]) -> None:
        """The cluster is at rest in `final`; closes the open event if its follow-ups are done."""
        if self._open is not None and self._open.start is not None and now > self._open.at:
            self._close(now, final)

    @property
    def waiting(self) -> bool:
        return self._open is not None

    def _close(self, balanced_at: float | None, final: Mapping[str, ClientAssignment]) -> None:
        event = self._open
        if event is None:
            return
        self._open = None
        took = bound = ratio = None
        if balanced_at is not None and event.start is not None:
            took = balanced_at - event.at
            moved = lower_bound(self.cluster, event.start, final, self.acceptable_lag, self.max_warmups)
            # Nothing can finish before the disruption is complete (a zone's return, a restart).
            bound = moved.model_copy(update={"seconds": moved.seconds + event.start.at - event.at})
            ratio = took / bound.seconds if bound.seconds > 0 else None
        self.outcomes.append(
            EventOutcome(
                index=event.index,
                type=event.type,
                at=event.at,
                balanced_at=balanced_at,
                time_to_balance_seconds=took,
                lower_bound=bound,
                ratio_to_lower_bound=ratio,
            )
        )

    def finish(self) -> None:
        self._close(None, {})

    def overall(self) -> tuple[float | None, float | None, float | None]:
        """Time from the first event to the balance after the last, its lower bound, and their ratio.

        The final balance cannot come before any event's time plus that event's bound, so the largest such
        sum (from the first event) bounds the whole.
        """
        if not self.outcomes:
            return None, None, None
        first, last = self.outcomes[0], self.outcomes[-1]
        took = None if last.balanced_at is None else last.balanced_at - first.at
        bounds = [o.at - first.at + o.lower_bound.seconds for o in self.outcomes if o.lower_bound is not None]
        bound = max(bounds) if bounds else None
        ratio = None if took is None or not bound else took / bound
        return took, bound, ratio
