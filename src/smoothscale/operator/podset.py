"""Pure builders of the objects the operator creates for an app: its pods and their state claims.

Pods are created one by one (no StatefulSet: any pod must be removable, as host swaps and drains need), named
`<app>-<ordinal>`, from the app's template plus what Contract 3 asks for: labels, the revision hash, the
state volume (the ordinal's claim, so that a pod recreated with that ordinal finds its state again; mounted
in the first container unless the template mounts it), the assignment ConfigMap as a volume, the environment
the client library and the bridge read (first in every container's list, so that the template's own
variables can refer to it as `$(SMOOTHSCALE_POD_NAME)`), and a restrictive security context. What the
template already defines wins, except the reserved labels.
"""

from __future__ import annotations

import copy
from typing import Any

from smoothscale.control import object_names
from smoothscale.resource import Runtime, StorageSpec, StreamsAppSpec

from .appref import AppRef

POD_SECURITY_CONTEXT: dict[str, Any] = {
    "runAsNonRoot": True,
    "seccompProfile": {"type": "RuntimeDefault"},
}
"""What a pod gets unless its template says otherwise: a stream processor needs no root and no unusual
syscalls, so a compromised one should not get them either (the Kubernetes "restricted" profile)."""
KAFKA_STREAMS_GRACE_SECONDS = 60
"""A Kafka Streams pod's `terminationGracePeriodSeconds` unless its template sets one: the time its
instance has, after SIGTERM, to close before it is SIGKILLed. An exactly-once close commits each task's
open transaction and closes its clients; a producer call that waits on a slow broker blocks for up to
`max.block.ms` (60 s, Kafka's default) before it fails. Killed mid-transaction instead, the instance leaves
a transaction open that holds back every `read_committed` reader of its output and repartition topics until
`transaction.timeout.ms` expires, and its state is corrupted on restart. Kubernetes' own 30 s is shorter
than one such wait; the app's own close timeout (`KafkaStreams.close(Duration)`) should stay below it."""
CONTAINER_SECURITY_CONTEXT: dict[str, Any] = {
    "allowPrivilegeEscalation": False,
    "capabilities": {"drop": ["ALL"]},
}


def _template(spec: StreamsAppSpec) -> dict[str, Any]:
    return spec.template.model_dump(mode="json")


def pod_labels(app: AppRef, revision: str) -> dict[str, str]:
    return {**object_names.app_labels(app.name), object_names.REVISION_LABEL: revision}


def build_pod(app: AppRef, spec: StreamsAppSpec, ordinal: int, revision: str) -> dict[str, Any]:
    """The pod `<app>-<ordinal>` of template `revision` (which must be `template_revision(spec)`)."""
    template = _template(spec)
    metadata = template.get("metadata") or {}
    pod_spec: dict[str, Any] = copy.deepcopy(template["spec"])
    name = object_names.pod_name(app.name, ordinal)
    volumes = list(pod_spec.get("volumes") or [])
    defined = {volume.get("name") for volume in volumes}
    for volume in (_state_volume(app, spec, ordinal), _assignment_volume(app)):
        if volume["name"] not in defined:
            volumes.append(volume)
    pod_spec["volumes"] = volumes
    pod_spec.setdefault("hostname", name)
    if spec.runtime is Runtime.KAFKA_STREAMS:
        pod_spec.setdefault("terminationGracePeriodSeconds", KAFKA_STREAMS_GRACE_SECONDS)
    pod_spec["securityContext"] = _restricted(POD_SECURITY_CONTEXT, pod_spec.get("securityContext"))
    _mount_state(pod_spec)
    for key in ("containers", "initContainers"):
        for container in pod_spec.get(key) or []:
            _add_env(container, app, spec)
            container["securityContext"] = _restricted(
                CONTAINER_SECURITY_CONTEXT, container.get("securityContext")
            )
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": name,
            "namespace": app.namespace,
            "labels": {**(metadata.get("labels") or {}), **pod_labels(app, revision)},
            "annotations": dict(metadata.get("annotations") or {}),
            "ownerReferences": [app.owner_reference()],
        },
        "spec": pod_spec,
    }


def build_state_claim(app: AppRef, spec: StreamsAppSpec, ordinal: int) -> dict[str, Any] | None:
    """The ordinal's PersistentVolumeClaim, or None when the app keeps state in an emptyDir."""
    storage = spec.storage
    if storage is None:
        return None
    claim_spec: dict[str, Any] = {
        "accessModes": ["ReadWriteOnce"],
        "resources": {"requests": {"storage": storage.size}},
    }
    if storage.storage_class_name is not None:
        claim_spec["storageClassName"] = storage.storage_class_name
    return {
        "apiVersion": "v1",
        "kind": "PersistentVolumeClaim",
        "metadata": {
            "name": object_names.state_claim(app.name, ordinal),
            "namespace": app.namespace,
            "labels": object_names.app_labels(app.name),
            "ownerReferences": claim_owners(app, storage),
        },
        "spec": claim_spec,
    }


def claim_owners(app: AppRef, storage: StorageSpec) -> list[dict[str, Any]]:
    """The owner references of the app's state claims: the app when they go with it (`whenDeleted:
    Delete`, the garbage collector removes them), none when they outlive it (`Retain`)."""
    return [app.owner_reference()] if storage.deletes_with_app else []


def _state_volume(app: AppRef, spec: StreamsAppSpec, ordinal: int) -> dict[str, Any]:
    if spec.storage is None:
        return {"name": object_names.STATE_VOLUME, "emptyDir": {}}
    claim = {"claimName": object_names.state_claim(app.name, ordinal)}
    return {"name": object_names.STATE_VOLUME, "persistentVolumeClaim": claim}


def _assignment_volume(app: AppRef) -> dict[str, Any]:
    # Optional: the pod starts before the first generation is published, and reads it when it appears.
    configmap = {"name": object_names.assignment_configmap(app.name), "optional": True}
    return {"name": object_names.ASSIGNMENT_VOLUME, "configMap": configmap}


def _restricted(defaults: dict[str, Any], template: dict[str, Any] | None) -> dict[str, Any]:
    """`defaults` under the template's own security context: every field the template sets wins whole (a
    template that adds capabilities or runs as root does so on purpose, and asked for exactly that)."""
    return {**copy.deepcopy(defaults), **(template or {})}


def _mount_state(pod_spec: dict[str, Any]) -> None:
    """The state volume mounted at `DEFAULT_STATE_DIR` in the first container, unless a container of the
    template mounts it already (where the template wants it)."""
    containers = pod_spec.get("containers") or []
    if not containers or any(_state_dir(container) is not None for container in containers):
        return
    first = containers[0]
    mount = {"name": object_names.STATE_VOLUME, "mountPath": object_names.DEFAULT_STATE_DIR}
    first["volumeMounts"] = [*(first.get("volumeMounts") or []), mount]


def _state_dir(container: dict[str, Any]) -> str | None:
    """Where the container mounts the state volume, if it does."""
    for mount in container.get("volumeMounts") or []:
        if mount.get("name") == object_names.STATE_VOLUME and mount.get("mountPath"):
            return str(mount["mountPath"])
    return None


def _add_env(container: dict[str, Any], app: AppRef, spec: StreamsAppSpec) -> None:
    """Contract 3's variables first in the container's list, then the template's own: Kubernetes expands a
    `$(NAME)` reference only from variables defined before it, so a template's `$(SMOOTHSCALE_POD_NAME)`
    must come after ours. A variable the template defines itself is the template's."""
    env = list(container.get("env") or [])
    defined = {variable.get("name") for variable in env}
    ours: list[dict[str, Any]] = [
        {"name": object_names.POD_NAME_ENV, "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}},
        {"name": object_names.NAMESPACE_ENV, "valueFrom": {"fieldRef": {"fieldPath": "metadata.namespace"}}},
        {"name": object_names.APP_ENV, "value": app.name},
        {"name": object_names.ASSIGNMENT_CONFIGMAP_ENV, "value": object_names.assignment_configmap(app.name)},
        {"name": object_names.METRICS_PORT_ENV, "value": str(spec.metrics.port)},
    ]
    state_dir = _state_dir(container)
    if state_dir is not None:
        ours.append({"name": object_names.STATE_DIR_ENV, "value": state_dir})
    lease = spec.failover.lease_seconds
    if lease is not None:  # the pod renews a Lease (docs/failover.md); without it, no variable at all
        ours.append({"name": object_names.LEASE_SECONDS_ENV, "value": str(lease)})
    container["env"] = [variable for variable in ours if variable["name"] not in defined] + env
