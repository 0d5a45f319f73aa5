"""Autoscalers in the simulator: the one `spec.autoscaling` runs (`control.autoscaler`), and the two
baselines it is measured against, each modelled on a published controller, all driving the same simulated
app through `spec.replicas` as they would through the scale subresource.

What they observe is one `LoadSample` per evaluation, built from the simulated cluster as the operator
observes a real one: the input rate (Kafka's end offsets), the backlog (the group's lag), each running
pod's processed rate and busy ratio (its threads' process-ratio), the restore rate of the copies restoring
now, whether tasks are moving. Each reads what its original reads:

- `LagThreshold`, modelled on KEDA's Kafka scaler under the HPA: the lag of the committed offsets
  (`backlog + inputRate * commitInterval / 2`: Kafka Streams commits every 30 s at least once, so a
  group that keeps up still shows half a commit interval of lag) divided by `lagThreshold`, polled every
  30 s; the HPA's 10% tolerance, its scale-up policy (double or +4 pods per 15 s, whichever is more, no
  stabilisation) and its 5-minute scale-down stabilisation window (the highest recommendation of the
  window). `lagThreshold` is set so that a steady load gives the same size as the busy target
  (`capacity * busyRatio * commitInterval / 2`): the baseline tuned as well as lag allows.
- `Utilization`, modelled on Flink's Kubernetes autoscaler (DS2) as its documentation's example
  configures it: every 60 s, over a 5-minute metrics window collected after a 1-minute stabilisation
  interval that follows every rescale (the window restarts then), true processing rate from busy time,
  target utilisation 0.6 within [0.4, 0.8], the backlog caught up within 5 minutes with 2 minutes of
  restart time, scale-downs at most by 60% and never within the 1-hour scale-up grace period. It knows
  nothing of state: a rescale's restore is its "restart time", a constant.
"""

from __future__ import annotations

import math
from collections import deque
from dataclasses import dataclass, field
from typing import Protocol

import numpy as np

from smoothscale.control.autoscaler import (
    AutoscalePolicy,
    AutoscalerMemory,
    Decision,
    LoadSample,
    PodLoad,
    decide,
    throughput,
)
from smoothscale.simulation.state import Cluster, FloatArray


class Autoscaler(Protocol):
    """Decides `spec.replicas` from the app's load; `interval` seconds between two evaluations."""

    name: str
    interval: float

    def evaluate(self, sample: LoadSample) -> int | None:
        """The replicas to set (None: leave them)."""


def load_sample(cluster: Cluster, now: float, replicas: int, max_warmups: int, migrating: bool) -> LoadSample:
    """What the operator observes of the simulated app's load at `now`."""
    tasks, rates = cluster.tasks, cluster.rates()
    work = rates.throughput * tasks.weight
    pods: dict[str, PodLoad] = {}
    for pod in cluster.up():
        processed = float(work[rates.owner == pod.index].sum())
        pods[pod.name] = PodLoad(processed, min(processed / pod.spec.process_records_per_second, 1.0))
    restoring = rates.restore_rate[rates.restoring]
    stateful = tasks.size[tasks.stateful]
    return LoadSample(
        now=now,
        replicas=replicas,
        input_rate=float(tasks.input_rate.sum()),
        backlog=float(tasks.backlog.sum()),
        pods=pods,
        tasks=len(tasks.ids),
        state_per_task=float(stateful.sum()) / max(len(tasks.ids), 1),
        restore_rate=float(np.mean(restoring)) if len(restoring) else None,
        max_warmups=max_warmups,
        migrating=migrating,
    )


@dataclass
class Smoothscale:
    """`spec.autoscaling` in Act mode: the control core's decision every round."""

    policy: AutoscalePolicy
    interval: float = 5.0
    name: str = "smoothscale"
    memory: AutoscalerMemory = field(default_factory=AutoscalerMemory)
    decisions: list[Decision] = field(default_factory=list)

    def evaluate(self, sample: LoadSample) -> int | None:
        decision, self.memory = decide(self.memory, sample, self.policy)
        if decision is None:
            return None
        self.decisions.append(decision)
        return decision.replicas


@dataclass
class LagThreshold:
    """KEDA's Kafka scaler under the HPA (see the module's docstring)."""

    min_replicas: int
    max_replicas: int
    lag_threshold: float
    commit_interval: float = 30.0
    interval: float = 30.0
    tolerance: float = 0.1
    up_period: float = 15.0
    down_window: float = 300.0
    name: str = "keda-lag"
    _recommendations: deque[tuple[float, int]] = field(default_factory=deque)
    _last_up: float | None = None

    def evaluate(self, sample: LoadSample) -> int | None:
        current = sample.replicas
        lag = sample.backlog + sample.input_rate * self.commit_interval / 2
        ratio = lag / (self.lag_threshold * max(current, 1))
        desired = current if abs(ratio - 1) <= self.tolerance else math.ceil(lag / self.lag_threshold)
        desired = min(max(desired, self.min_replicas), self.max_replicas, sample.tasks)
        now = sample.now
        self._recommendations.append((now, desired))
        while self._recommendations and now - self._recommendations[0][0] > self.down_window:
            self._recommendations.popleft()
        if desired > current:
            if self._last_up is not None and now - self._last_up < self.up_period:
                return None
            self._last_up = now
            return min(desired, max(2 * current, current + 4))
        stabilised = max(r for _, r in self._recommendations)
        return stabilised if stabilised < current else None


@dataclass
class Utilization:
    """Flink's autoscaler (DS2) as its documentation's example configures it (see the module's docstring)."""

    min_replicas: int
    max_replicas: int
    interval: float = 60.0
    window: float = 300.0
    stabilization: float = 60.0
    target: float = 0.6
    boundary: float = 0.2
    catch_up: float = 300.0
    restart: float = 120.0
    max_down_factor: float = 0.6
    grace: float = 3600.0
    name: str = "flink-utilization"
    _samples: deque[tuple[float, float, float]] = field(default_factory=deque)  # (t, input, true capacity)
    _rescaled_at: float = -math.inf
    _last_up: float = -math.inf

    def evaluate(self, sample: LoadSample) -> int | None:
        now, current = sample.now, sample.replicas
        if now - self._rescaled_at < self.stabilization:
            return None
        busy = [(p.processed, p.busy) for p in sample.pods.values() if p.busy]
        if not busy:
            return None
        per_pod = sum(r for r, _ in busy) / sum(b for _, b in busy)
        self._samples.append((now, sample.input_rate, throughput(current, per_pod, sample.tasks)))
        collecting_since = self._rescaled_at + self.stabilization
        if now - collecting_since < self.window:
            return None  # the window is not full yet
        while now - self._samples[0][0] > self.window:
            self._samples.popleft()
        rate = sum(s[1] for s in self._samples) / len(self._samples)
        capacity = sum(s[2] for s in self._samples) / len(self._samples)
        catch_up = sample.backlog / self.catch_up

        def needed(utilization: float, restart: bool) -> float:
            return rate / utilization + catch_up + (rate * self.restart / self.catch_up if restart else 0.0)

        if (
            needed(self.target - self.boundary, True)
            >= capacity
            >= needed(self.target + self.boundary, False)
        ):
            return None  # within the utilisation boundary
        wanted = math.ceil(current * needed(self.target, True) / capacity)
        if wanted < current:
            if now - self._last_up < self.grace:
                return None
            wanted = max(wanted, math.ceil(current * (1 - self.max_down_factor)))
        wanted = min(max(wanted, self.min_replicas), self.max_replicas, sample.tasks)
        if wanted == current:
            return None
        self._rescaled_at = now
        self._samples.clear()
        if wanted > current:
            self._last_up = now
        return wanted


@dataclass(frozen=True)
class Action:
    at: float
    before: int
    to: int


@dataclass
class AutoscaleRun:
    """One autoscaler attached to a simulation: its actions, and the figures integrated scrape by scrape.

    Seconds over the lag target: while the oldest unprocessed input record of some task is older than the
    target (its age read from the task's input history: when the record the task processes next arrived;
    the backlog over the input rate would jump when the rate falls). Replica-seconds: the pods that exist,
    surge and leaving pods included.
    """

    autoscaler: Autoscaler
    lag_target: float
    actions: list[Action] = field(default_factory=list)
    over_target_seconds: float = 0.0
    replica_seconds: float = 0.0
    next_at: float = 0.0
    _last: float = 0.0
    _arrived: list[tuple[float, FloatArray]] = field(default_factory=list)
    """(time, records arrived per task since the start), oldest first, back to the oldest unprocessed."""

    def account(self, cluster: Cluster, now: float) -> None:
        """The figures from the last call to `now`, at the state of `now` (the input rate is constant in
        between: it changes at events, which the scrapes fall on)."""
        tasks = cluster.tasks
        elapsed, self._last = now - self._last, now
        arrived = self._arrived[-1][1] + tasks.input_rate * elapsed if self._arrived else tasks.input_rate * 0
        self._arrived.append((now, arrived))
        processed = arrived - tasks.backlog
        # the oldest entry any task still needs: older ones go
        oldest = 0
        while oldest + 1 < len(self._arrived) and bool((self._arrived[oldest + 1][1] <= processed).all()):
            oldest += 1
        del self._arrived[:oldest]
        waiting = tasks.backlog > 1e-6
        if waiting.any():
            times = np.array([t for t, _ in self._arrived])
            history = np.stack([a for _, a in self._arrived])  # (entries, tasks)
            since = (history <= processed[None, :]).sum(axis=0) - 1  # last entry the next record is after
            age = now - times[np.clip(since, 0, len(times) - 1)]
            if float(age[waiting].max()) > self.lag_target:
                self.over_target_seconds += elapsed
        self.replica_seconds += elapsed * len(cluster.present())
