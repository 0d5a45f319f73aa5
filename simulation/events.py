"""What the scenario's events do to the cluster: pods come, go, crash, restart and are marked leaving.

Pods are created the way the operator creates them (Contract 3): named `<app>-<ordinal>` with ordinals that
are never reused, spread over zones like a topology spread constraint (the zone with the fewest staying
pods, the first such zone on a tie), never in a zone that is down. A pod in a zone that is down restarts
only when its zone returns. Scale-in marks the highest ordinals leaving, as a StatefulSet would
remove them. Effects that come later (a restart, a zone's return, a host swap's leaving mark) are returned
as follow-ups for the engine to schedule.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from smoothscale.simulation.scenario import (
    Drain,
    Event,
    HostSwap,
    InputRate,
    OperatorRestart,
    PodCrash,
    PodSpec,
    ScaleIn,
    ScaleOut,
    Scenario,
    ScenarioError,
    ZoneOutage,
)
from smoothscale.simulation.state import Cluster, Pod


@dataclass(frozen=True, slots=True)
class Restart:
    pods: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class ZoneReturn:
    zone: int
    pods: tuple[str, ...]  # the pods the outage stopped


@dataclass(frozen=True, slots=True)
class MarkLeaving:
    pods: tuple[str, ...]


FollowUp = Restart | ZoneReturn | MarkLeaving


class Script:
    """Applies scenario events to a cluster; `booted` lists pods that must now read the assignment."""

    def __init__(self, scenario: Scenario, cluster: Cluster) -> None:
        self.scenario = scenario
        self.cluster = cluster
        self.next_ordinal = 0
        self.booted: list[Pod] = []
        self.down_zones: dict[int, list[str]] = {}  # zone -> pods due to restart once it returns

    def create_pods(self, count: int, spec: PodSpec) -> list[Pod]:
        cluster = self.cluster
        created = []
        for _ in range(count):
            staying = [p.zone for p in cluster.present() if p.leaving_since is None]
            load = np.bincount(np.array(staying, dtype=np.int64), minlength=len(cluster.zones)).astype(float)
            if len(self.down_zones) < len(cluster.zones):
                load[list(self.down_zones)] = np.inf  # nowhere to schedule a pod there
            zone = int(np.argmin(load))
            pod = cluster.add_pod(f"{self.scenario.app}-{self.next_ordinal}", self.next_ordinal, zone, spec)
            self.next_ordinal += 1
            created.append(pod)
        self.booted.extend(created)
        return created

    def apply(self, index: int, event: Event, now: float) -> list[tuple[float, FollowUp]]:
        """Apply one event at `now`; returns (delay, follow-up) pairs. Operator restarts are the engine's."""
        cluster = self.cluster
        where = f"events[{index}] ({event.type})"
        if isinstance(event, ScaleOut):
            self.create_pods(event.pods, event.pod_spec or self.scenario.pods)
        elif isinstance(event, ScaleIn):
            staying = [p for p in cluster.present() if p.leaving_since is None]
            if event.pod_names is not None:
                chosen = [self._pod(where, "podNames", name) for name in event.pod_names]
            else:
                chosen = sorted(staying, key=lambda p: p.ordinal)[len(staying) - (event.pods or 0) :]
            self._mark_leaving(chosen, now)
        elif isinstance(event, HostSwap):
            old = [p for p in cluster.present() if p.leaving_since is None]
            self.create_pods(len(old), event.pod_spec or self.scenario.pods)
            leave = MarkLeaving(tuple(p.name for p in old))
            if event.leave_after_seconds == 0:
                self.follow_up(leave, now)
            else:
                return [(event.leave_after_seconds, leave)]
        elif isinstance(event, PodCrash):
            pod = self._pod(where, "pod", event.pod)
            if pod.up:
                cluster.crash(pod, keep_state=pod.spec.persistent_volume and not event.volume_lost)
            if event.restart_after_seconds is None:
                cluster.remove(pod)
            else:
                return [(event.restart_after_seconds, Restart((pod.name,)))]
        elif isinstance(event, ZoneOutage):
            zone = self.scenario.zones.index(event.zone)
            stopped = [p for p in cluster.up() if p.zone == zone]
            self.down_zones.setdefault(zone, [])
            for pod in stopped:
                cluster.crash(pod, keep_state=pod.spec.persistent_volume)
            if event.duration_seconds is not None:
                return [(event.duration_seconds, ZoneReturn(zone, tuple(p.name for p in stopped)))]
        elif isinstance(event, Drain):
            pod = self._pod(where, "pod", event.pod)
            self._mark_leaving([pod], now)
            if event.replace:
                self.create_pods(1, pod.spec)
        elif isinstance(event, InputRate):
            affected = [
                i
                for i, task in enumerate(cluster.tasks.models)
                if event.subtopology in (None, task.subtopology)
            ]
            cluster.set_input_rate(np.array(affected, dtype=np.int64), event.factor)
        else:
            assert isinstance(event, OperatorRestart)
        return []

    def follow_up(self, action: FollowUp, now: float) -> None:
        cluster = self.cluster
        names = list(action.pods)
        if isinstance(action, ZoneReturn):
            names += self.down_zones.pop(action.zone, [])
        pods = [cluster.pods[cluster.by_name[name]] for name in names]
        if isinstance(action, MarkLeaving):
            self._mark_leaving([p for p in pods if not p.removed], now)
            return
        for pod in pods:
            if pod.zone in self.down_zones:
                self.down_zones[pod.zone].append(pod.name)  # comes back with its zone
            elif not pod.removed and not pod.up:
                cluster.restart(pod)
                self.booted.append(pod)

    def _mark_leaving(self, pods: list[Pod], now: float) -> None:
        for pod in pods:
            if pod.leaving_since is None:
                pod.leaving_since = now

    def _pod(self, where: str, field: str, name: str) -> Pod:
        index = self.cluster.by_name.get(name)
        if index is None or self.cluster.pods[index].removed:
            raise ScenarioError([f"{where}.{field}: pod {name!r} does not exist any more at that time"])
        return self.cluster.pods[index]
