"""What the scenario's events change: what a user changes (the app's `replicas` and template, a drain) and
what the world does (crashes, restarts, zone outages, input rates).

Which pods to create, mark leaving, take back or retire is the operator's decision (`podset.py` carries out
the control core's `plan_pod_set`); this module only keeps the app's spec as the user set it, and schedules
pods as Kubernetes would: a new pod goes to the zone with the fewest staying pods (the first such zone on a
tie, as a topology spread constraint spreads them), never to a zone that is down. A pod in a zone that is
down restarts only when its zone returns. Effects that come later (a restart, a zone's return) are returned
as follow-ups for the engine to schedule.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from smoothscale.simulation.operator_loop import AppSpec
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


FollowUp = Restart | ZoneReturn


class Script:
    """Applies scenario events to the spec and the cluster, and schedules the pods the operator creates;
    `booted` lists pods that must now read the assignment."""

    def __init__(self, scenario: Scenario, cluster: Cluster) -> None:
        self.scenario = scenario
        self.cluster = cluster
        self.spec = AppSpec(replicas=scenario.pods.count, revision="0")
        """The StreamsApp's spec as the user set it: the pod set's target."""
        self.machine: PodSpec = scenario.pods
        """The machine of the pods created from now on."""
        self.booted: list[Pod] = []
        self.down_zones: dict[int, list[str]] = {}  # zone -> pods due to restart once it returns

    def create_pod(self, ordinal: int, now: float) -> Pod:
        """The pod of `ordinal`, of the current template, on the current machine, scheduled in a zone."""
        cluster = self.cluster
        staying = [p.zone for p in cluster.present() if p.leaving_since is None]
        load = np.bincount(np.array(staying, dtype=np.int64), minlength=len(cluster.zones)).astype(float)
        if len(self.down_zones) < len(cluster.zones):
            load[list(self.down_zones)] = np.inf  # nowhere to schedule a pod there
        name = f"{self.scenario.app}-{ordinal}"
        pod = cluster.add_pod(name, ordinal, int(np.argmin(load)), self.machine, self.spec.revision, now)
        self.booted.append(pod)
        return pod

    def apply(self, index: int, event: Event, now: float) -> list[tuple[float, FollowUp]]:
        """Apply one event at `now`; returns (delay, follow-up) pairs. Operator restarts are the engine's."""
        cluster = self.cluster
        where = f"events[{index}] ({event.type})"
        if isinstance(event, ScaleOut):
            self.spec = replace(self.spec, replicas=self.spec.replicas + event.pods)
            self.machine = event.pod_spec or self.scenario.pods
        elif isinstance(event, ScaleIn):
            if event.pod_names is not None:
                self._mark_leaving([self._pod(where, "podNames", name) for name in event.pod_names], now)
            leaving = len(event.pod_names) if event.pod_names is not None else event.pods or 0
            self.spec = replace(self.spec, replicas=self.spec.replicas - leaving)
        elif isinstance(event, HostSwap):
            self.spec = replace(self.spec, revision=str(int(self.spec.revision) + 1))  # a new template
            self.machine = event.pod_spec or self.scenario.pods
        elif isinstance(event, PodCrash):
            pod = self._pod(where, "pod", event.pod)
            if pod.up:
                cluster.crash(pod, keep_state=pod.spec.persistent_volume and not event.volume_lost)
            if event.restart_after_seconds is None:
                cluster.remove(pod)  # its node is gone: the pod object with it
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
            self._mark_leaving([self._pod(where, "pod", event.pod)], now)
            if not event.replace:
                self.spec = replace(self.spec, replicas=self.spec.replicas - 1)
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

    def follow_up(self, action: FollowUp) -> None:
        cluster = self.cluster
        names = list(action.pods)
        if isinstance(action, ZoneReturn):
            names += self.down_zones.pop(action.zone, [])
        for pod in [cluster.pods[cluster.by_name[name]] for name in names]:
            if pod.zone in self.down_zones:
                self.down_zones[pod.zone].append(pod.name)  # comes back with its zone
            elif not pod.removed and not pod.up:
                cluster.restart(pod)
                self.booted.append(pod)

    def _mark_leaving(self, pods: list[Pod], now: float) -> None:
        """A person's mark (`smoothscale drain`): a time, no operator's reason."""
        for pod in pods:
            if pod.leaving_since is None:
                pod.leaving_since = now

    def _pod(self, where: str, field: str, name: str) -> Pod:
        index = self.cluster.by_name.get(name)
        if index is None or self.cluster.pods[index].removed:
            raise ScenarioError([f"{where}.{field}: no pod {name!r} at that time"])
        return self.cluster.pods[index]
