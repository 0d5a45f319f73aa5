"""Every label, annotation, object name and environment variable of the operator's objects.

Contract 3's names (the ones an app's pods read too: the app label, the leaving annotation, the ConfigMap's
keys, the pods' environment) have their one home in the contract (`smoothscale.contract.shared_names`), the
lowest layer both import; they are named here too so that the operator reads every name from one module.
The names only the operator uses (as Strimzi's `Annotations.java`) are defined here.
"""

from __future__ import annotations

import functools
import re
from typing import Final

from smoothscale.contract.shared_names import (
    APP_ENV,
    APP_LABEL,
    ASSIGNMENT_CONFIGMAP_ENV,
    ASSIGNMENT_KEY,
    DEFAULT_STATE_DIR,
    GENERATION_KEY,
    LEASE_LABEL,
    LEASE_SECONDS_ENV,
    LEAVING_ANNOTATION,
    METRICS_PORT_ENV,
    NAMESPACE_ENV,
    POD_NAME_ENV,
    STATE_DIR_ENV,
    STATE_VOLUME,
    TAKEN_AT_GENERATION_ANNOTATION,
    WAITING_FOR_GENERATION_ANNOTATION,
    assignment_configmap,
    pod_lease,
)

# Contract 3's names, re-exported from their one home (the client library's contract).
__all__ = [
    "APP_ENV",
    "APP_LABEL",
    "ASSIGNMENT_CONFIGMAP_ENV",
    "ASSIGNMENT_KEY",
    "DEFAULT_STATE_DIR",
    "GENERATION_KEY",
    "LEASE_LABEL",
    "LEASE_SECONDS_ENV",
    "LEAVING_ANNOTATION",
    "METRICS_PORT_ENV",
    "NAMESPACE_ENV",
    "POD_NAME_ENV",
    "STATE_DIR_ENV",
    "STATE_VOLUME",
    "TAKEN_AT_GENERATION_ANNOTATION",
    "WAITING_FOR_GENERATION_ANNOTATION",
    "assignment_configmap",
    "pod_lease",
]


# -- labels of every object the operator creates ---------------------------------------------------------
NAME_LABEL: Final = "app.kubernetes.io/name"
MANAGED_BY_LABEL: Final = "app.kubernetes.io/managed-by"
MANAGED_BY: Final = "smoothscale"
REVISION_LABEL: Final = "smoothscale.io/revision"
"""A hash of the pod template the pod was built from: pods whose revision differs are swapped or restarted."""

# -- annotations on pods ------------------------------------------------------------------------------------
LEAVING_REASON_ANNOTATION: Final = "smoothscale.io/leaving-reason"
"""Why the operator marked a pod leaving (a `LeavingReason`); absent when a person did (a manual drain)."""

METRICS_PORT_ANNOTATION: Final = "smoothscale.io/metrics-port"
"""Overrides `spec.metrics.port` for one pod. For environments where pods share one IP, such as the
sandbox's kubelet stand-in, which runs every pod's worker on 127.0.0.1 with a port of its own and writes the
port here. Only the port can be overridden: the operator scrapes nothing but the pod's own IP."""

RESTARTED_AT_ANNOTATION: Final = "smoothscale.io/restartedAt"
"""On the app's pod template, as `kubectl rollout restart`'s `kubectl.kubernetes.io/restartedAt`:
`smoothscale swap` sets it to the time of the request, which changes the template's revision, so the update
strategy replaces every pod."""

# -- what the operator adds to the pod template ------------------------------------------------------------
ASSIGNMENT_VOLUME: Final = "assignment"
"""Volume of the assignment ConfigMap, for apps that read the mounted file instead of the API."""

FINALIZER: Final = "smoothscale.io/finalizer"
"""kopf's finalizer on a StreamsApp, so that its daemon stops before the object goes."""
REPORTING_COMPONENT: Final = "smoothscale-operator"


class LeavingReason:
    """Values of `LEAVING_REASON_ANNOTATION`."""

    SCALE_DOWN: Final = "ScaleDown"
    SWAP: Final = "Swap"


def pod_name(app: str, ordinal: int) -> str:
    return f"{app}-{ordinal}"


def ordinal_of(app: str, pod: str) -> int | None:
    """The ordinal of `<app>-<ordinal>`, or None for a pod not named that way."""
    match = _pod_name_pattern(app).fullmatch(pod)
    return int(match.group(1)) if match else None


@functools.lru_cache(maxsize=1024)
def _pod_name_pattern(app: str) -> re.Pattern[str]:
    """Every round reads the ordinal of every pod: the app's pattern is compiled once."""
    return re.compile(re.escape(app) + r"-(0|[1-9][0-9]*)")


def state_claim(app: str, ordinal: int) -> str:
    """The PersistentVolumeClaim of an ordinal: a pod recreated with that ordinal finds its state again."""
    return f"{app}-state-{ordinal}"


def selector(app: str) -> str:
    """The label selector of an app's pods (`status.selector`, for the scale subresource and autoscalers)."""
    return f"{APP_LABEL}={app}"


def managed_selector(app: str) -> str:
    """The label selector of the app's pods that the operator manages (a pod of the same app label made by
    anyone else is not the operator's to count or to delete)."""
    return f"{APP_LABEL}={app},{MANAGED_BY_LABEL}={MANAGED_BY}"


def app_labels(app: str) -> dict[str, str]:
    """Labels of every object the operator creates for an app (pods, claims, the ConfigMap)."""
    return {NAME_LABEL: app, MANAGED_BY_LABEL: MANAGED_BY, APP_LABEL: app}
