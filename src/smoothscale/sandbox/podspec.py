"""What the kubelet stand-in reads from a pod and its StreamsApp to run the pod's sample worker.

Pure functions of the objects, so that they are tested as data. The stand-in runs `smoothscale worker` for
the pod's first container whatever its image and command say; everything else follows the pod: the
container's environment (plain values with their `$(NAME)` references expanded, the usual `fieldRef`s, the
ConfigMaps and Secrets it names, its resources),
the state volume (a claim or an emptyDir), the restart policy, the grace period, and the app's metrics port,
path and stateless subtopologies.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from smoothscale.contract import shared_names as contract
from smoothscale.resource.spec import Runtime

from .downward import Allocatable, machine_allocatable, resource_value
from .envexpansion import environment

Body = Mapping[str, Any]


@dataclass(frozen=True)
class AppSettings:
    """What the worker must know of its StreamsApp: where the operator scrapes, which tasks are stateless."""

    metrics_port: int = contract.DEFAULT_METRICS_PORT
    metrics_path: str = contract.DEFAULT_METRICS_PATH
    stateless_subtopologies: frozenset[str] = frozenset()
    runtime: str = "ClientLibrary"
    """`spec.runtime`: what the pod's process is (the sample worker, or a Kafka Streams app)."""
    streams_protocol: bool = False
    """`spec.kafka.groupProtocol: streams`: the app follows the brokers' assignment, not the ConfigMap."""


def app_settings(streamsapp: Body | None) -> AppSettings:
    """The settings of a StreamsApp object (defaults when there is none, e.g. a pod created by hand)."""
    spec = (streamsapp or {}).get("spec") or {}
    metrics = spec.get("metrics") or {}
    subtopologies = (spec.get("topology") or {}).get("subtopologies") or []
    return AppSettings(
        metrics_port=metrics_port(spec),
        metrics_path=str(metrics.get("path") or contract.DEFAULT_METRICS_PATH),
        stateless_subtopologies=frozenset(
            str(sub["name"]) for sub in subtopologies if sub.get("stateful", True) is False and "name" in sub
        ),
        runtime=str(spec.get("runtime") or "ClientLibrary"),
        streams_protocol=(spec.get("kafka") or {}).get("groupProtocol") == "streams",
    )


def metrics_port(spec: Body) -> int:
    """A StreamsApp spec's `metrics.port`, or its runtime's default (as `StreamsAppSpec` reads it)."""
    port = (spec.get("metrics") or {}).get("port")
    return int(port) if port else Runtime(spec.get("runtime") or Runtime.CLIENT_LIBRARY).metrics_port


Sources = Mapping[tuple[str, str], Mapping[str, str]]
"""The data of the ConfigMaps and Secrets a pod's environment names, by (kind, name), as the stand-in read
them when it started the pod (a Secret's values decoded); one that does not exist is absent."""
_REFS = {"configMapRef": "ConfigMap", "secretRef": "Secret"}
_KEY_REFS = {"configMapKeyRef": "ConfigMap", "secretKeyRef": "Secret"}


@dataclass(frozen=True)
class SourceRef:
    """A ConfigMap or Secret that the first container's `env` (`...KeyRef`) or `envFrom` (`...Ref`) names."""

    kind: str
    name: str
    key: str | None
    """The key a `...KeyRef` reads; None for `envFrom`, which takes every key."""
    optional: bool


def env_sources(pod: Body) -> list[SourceRef]:
    """Every ConfigMap and Secret that the first container's environment reads, in its order."""
    container = ((pod.get("spec") or {}).get("containers") or [{}])[0]
    found = []
    for source in container.get("envFrom") or []:
        for field, kind in _REFS.items():
            if ref := source.get(field):
                found.append(SourceRef(kind, str(ref.get("name")), None, bool(ref.get("optional"))))
    for variable in container.get("env") or []:
        for field, kind in _KEY_REFS.items():
            if ref := (variable.get("valueFrom") or {}).get(field):
                found.append(
                    SourceRef(kind, str(ref.get("name")), str(ref.get("key")), bool(ref.get("optional")))
                )
    return found


def unresolved(pod: Body, sources: Sources) -> list[str]:
    """What a kubelet would not start the container without (`CreateContainerConfigError`): each ConfigMap or
    Secret, or key of one, that the environment names without `optional: true` and that does not exist."""
    missing = []
    for ref in env_sources(pod):
        data = sources.get((ref.kind, ref.name))
        if ref.optional or (data is not None and (ref.key is None or ref.key in data)):
            continue
        missing.append(f"{ref.kind} {ref.name}" + ("" if data is None else f" (no key {ref.key})"))
    return list(dict.fromkeys(missing))


def container_env(
    pod: Body,
    pod_ip: str,
    placed: Mapping[str, str] | None = None,
    sources: Sources | None = None,
    allocatable: Allocatable = machine_allocatable,
) -> dict[str, str]:
    """The first container's environment as a kubelet makes it (`envexpansion.environment`: `envFrom`'s
    variables first, then `value`s with their `$(NAME)` references expanded, `fieldRef`s to the pod's
    metadata, node and IP, `configMapKeyRef`s and `secretKeyRef`s from `sources`, `resourceFieldRef`s from
    the container's resources or, for a limit it does not set, the node's `allocatable`: `downward`).

    `placed`: what the stand-in decided for variables the pod defines, put in their place in the list so
    that later references see them: a pod's view is not the host's (the state volume's mount path is a
    folder of the stand-in's, the metrics port one the stand-in allocated)."""
    containers = (pod.get("spec") or {}).get("containers") or [{}]
    placed = placed or {}
    sources = sources or {}

    def value_from(variable: Mapping[str, Any]) -> str | None:
        source = variable.get("valueFrom") or {}
        field_path = (source.get("fieldRef") or {}).get("fieldPath")
        if field_path:
            return _field(pod, str(field_path), pod_ip)
        for field, kind in _KEY_REFS.items():
            if ref := source.get(field):
                return (sources.get((kind, str(ref.get("name")))) or {}).get(str(ref.get("key")))
        if ref := source.get("resourceFieldRef"):
            return resource_value(pod, containers[0], ref, allocatable)
        return None

    before: dict[str, str] = {}
    for source in containers[0].get("envFrom") or []:
        for field, kind in _REFS.items():
            if ref := source.get(field):
                data = sources.get((kind, str(ref.get("name")))) or {}
                before.update({str(source.get("prefix") or "") + key: value for key, value in data.items()})

    variables = [
        {"name": variable.get("name"), "value": placed[variable["name"]]}
        if variable.get("name") in placed
        else variable
        for variable in containers[0].get("env") or []
    ]
    return environment(variables, value_from, before)


def _field(pod: Body, path: str, pod_ip: str) -> str | None:
    metadata = pod.get("metadata") or {}
    simple = {
        "metadata.name": metadata.get("name"),
        "metadata.namespace": metadata.get("namespace"),
        "metadata.uid": metadata.get("uid"),
        "spec.nodeName": (pod.get("spec") or {}).get("nodeName"),
        "spec.serviceAccountName": (pod.get("spec") or {}).get("serviceAccountName"),
        "status.podIP": pod_ip,
        "status.hostIP": "127.0.0.1",
    }
    if path in simple:
        value = simple[path]
        return None if value is None else str(value)
    for prefix, key in (("metadata.labels", "labels"), ("metadata.annotations", "annotations")):
        if path.startswith(prefix + "['") and path.endswith("']"):
            found = (metadata.get(key) or {}).get(path[len(prefix) + 2 : -2])
            return None if found is None else str(found)
    return None


@dataclass(frozen=True)
class StateVolume:
    """The pod's state volume: a PersistentVolumeClaim (`claim`), or an emptyDir that dies with the pod."""

    claim: str | None


def state_volume(pod: Body) -> StateVolume:
    """The volume named `state` (Contract 3), else the pod's first claim, else an emptyDir."""
    volumes = (pod.get("spec") or {}).get("volumes") or []
    named = [v for v in volumes if v.get("name") == contract.STATE_VOLUME]
    claims = [v for v in volumes if v.get("persistentVolumeClaim")]
    for volume in named or claims:
        claim = (volume.get("persistentVolumeClaim") or {}).get("claimName")
        return StateVolume(claim=str(claim) if claim else None)
    return StateVolume(claim=None)


def restarts_after(pod: Body, exit_code: int) -> bool:
    """Whether the pod's `restartPolicy` (Always by default, OnFailure, Never) restarts a container that
    exited with `exit_code`; one that is not restarted ends the pod."""
    policy = str((pod.get("spec") or {}).get("restartPolicy") or "Always")
    return policy == "Always" or (policy == "OnFailure" and exit_code != 0)


def grace_seconds(pod: Body, cap: float | None = None) -> float:
    """`terminationGracePeriodSeconds` (30 by default, as Kubernetes'), capped at `cap` when one is given."""
    grace = (pod.get("spec") or {}).get("terminationGracePeriodSeconds")
    seconds = float(30 if grace is None else grace)
    return seconds if cap is None else min(cap, seconds)
