"""Every label, annotation, object name and environment variable the operator and the app's pods share.

One home for these strings (as Strimzi's `Annotations.java`): the operator, the client library in the pods,
the sandbox's kubelet stand-in, the CLI and the Helm chart must all agree on them, and a typo in any one fails
only at run time. DESIGN.md's Contract 3 fixes the labels and the ConfigMap; the rest is written down here.
"""

from __future__ import annotations

import re
from typing import Final

# -- labels of every pod (Contract 3) ---------------------------------------------------------------------
NAME_LABEL: Final = "app.kubernetes.io/name"
MANAGED_BY_LABEL: Final = "app.kubernetes.io/managed-by"
MANAGED_BY: Final = "smoothscale"
APP_LABEL: Final = "smoothscale.io/app"
REVISION_LABEL: Final = "smoothscale.io/revision"
"""A hash of the pod template the pod was built from: pods whose revision differs are swapped or restarted."""

# -- annotations on pods ------------------------------------------------------------------------------------
LEAVING_ANNOTATION: Final = "smoothscale.io/leaving"
"""Starts the leaving procedure for a pod. Any value works for a person (`kubectl annotate pod x
smoothscale.io/leaving=true`); the operator then rewrites it to the RFC 3339 time it first saw it, which is
the `since` of the scale-down timeout and survives operator restarts."""

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

# -- the assignment ConfigMap (Contract 3) -----------------------------------------------------------------
ASSIGNMENT_KEY: Final = "assignment.json.gz"
"""binaryData key: `smoothscale.assignor.handover.encode_publication` (gzip'd JSON of a Publication)."""
GENERATION_KEY: Final = "generation"
"""data key: the generation of the publication, in decimal, readable without decoding the assignment."""

# -- what the operator adds to the pod template ------------------------------------------------------------
STATE_VOLUME: Final = "state"
"""Volume for the state stores: the pod's PersistentVolumeClaim when `spec.storage` is set, else an
emptyDir. Containers mount it where they keep state (a volumeMount named `state`)."""
ASSIGNMENT_VOLUME: Final = "assignment"
"""Volume of the assignment ConfigMap, for apps that read the mounted file instead of the API."""

POD_NAME_ENV: Final = "SMOOTHSCALE_POD_NAME"
NAMESPACE_ENV: Final = "SMOOTHSCALE_NAMESPACE"
APP_ENV: Final = "SMOOTHSCALE_APP"
ASSIGNMENT_CONFIGMAP_ENV: Final = "SMOOTHSCALE_ASSIGNMENT_CONFIGMAP"

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
    match = re.fullmatch(re.escape(app) + r"-(0|[1-9][0-9]*)", pod)
    return int(match.group(1)) if match else None


def assignment_configmap(app: str) -> str:
    return f"{app}-assignment"


def state_claim(app: str, ordinal: int) -> str:
    """The PersistentVolumeClaim of an ordinal: a pod recreated with that ordinal finds its state again."""
    return f"{app}-state-{ordinal}"


def selector(app: str) -> str:
    """The label selector of an app's pods (`status.selector`, for the scale subresource and autoscalers)."""
    return f"{APP_LABEL}={app}"


def app_labels(app: str) -> dict[str, str]:
    """Labels of every object the operator creates for an app (pods, claims, the ConfigMap)."""
    return {NAME_LABEL: app, MANAGED_BY_LABEL: MANAGED_BY, APP_LABEL: app}
