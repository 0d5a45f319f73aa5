"""The assignment ConfigMap `<app>-assignment`: how a generation reaches the pods (Contract 3).

`binaryData["assignment.json.gz"]` holds the whole publication (every pod's active, standby and warmup
tasks, and the hand-overs still waiting for a revocation to be acknowledged); `data["generation"]` repeats
the generation in plain text for people and for pods that only poll it; `smoothscale.contract.configmap`
is their one codec. Pods acknowledge a generation through their `smoothscale_assignment_generation` metric.

The ConfigMap is the operator's memory: an operator that restarts reads the publication back from it, so a
hand-over in flight resumes where it was. Writes are conditional on the resourceVersion read, so an operator
that lost its leadership without noticing cannot overwrite what its successor published.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from smoothscale.contract.configmap import configmap_content, from_configmap
from smoothscale.contract.publication import EMPTY, Publication
from smoothscale.control import object_names

from .appref import AppRef
from .kube import KubeClient, KubeError, core_path


@dataclass(frozen=True)
class Published:
    """The publication in force, and the resourceVersion of the ConfigMap holding it (None: no ConfigMap)."""

    publication: Publication
    resource_version: str | None


NOTHING_PUBLISHED = Published(EMPTY, None)


def build_assignment_configmap(app: AppRef, publication: Publication) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {
            "name": object_names.assignment_configmap(app.name),
            "namespace": app.namespace,
            "labels": object_names.app_labels(app.name),
            "ownerReferences": [app.owner_reference()],
        },
        **configmap_content(publication),
    }


async def load_published(api: KubeClient, app: AppRef) -> Published:
    """What is published now; NOTHING_PUBLISHED when the ConfigMap does not exist yet. Raises
    CorruptAssignment when it holds no publication: nothing may be published over it blindly."""
    path = core_path(app.namespace, "configmaps", object_names.assignment_configmap(app.name))
    try:
        configmap = await api.get(path)
    except KubeError as error:
        if error.not_found:
            return NOTHING_PUBLISHED
        raise
    version = (configmap.get("metadata") or {}).get("resourceVersion")
    return Published(from_configmap(configmap), str(version) if version else None)


async def publish(api: KubeClient, app: AppRef, current: Published, publication: Publication) -> Published:
    """Write `publication` over `current`; KubeError 409 if someone else wrote the ConfigMap meanwhile."""
    body = build_assignment_configmap(app, publication)
    if current.resource_version is None:
        written = await api.create(core_path(app.namespace, "configmaps"), body)
    else:
        body["metadata"]["resourceVersion"] = current.resource_version
        path = core_path(app.namespace, "configmaps", object_names.assignment_configmap(app.name))
        written = await api.patch(path, body)
    return Published(publication, str((written.get("metadata") or {}).get("resourceVersion") or "") or None)
