"""The names a pod of a StreamsApp shares with the operator (DESIGN.md, Contract 3), seen from the pod's side.

The client library may import nothing but the pure assignor, so it cannot read the operator's constants; it
keeps its own copy here, and `tests/sandbox/test_sandbox_contract.py` fails the moment the two disagree.
"""

from __future__ import annotations

from typing import Final

# -- the assignment ConfigMap --------------------------------------------------------------------------------
ASSIGNMENT_KEY: Final = "assignment.json.gz"
"""binaryData key holding `smoothscale.assignor.handover.encode_publication` bytes (base64 in the API)."""
GENERATION_KEY: Final = "generation"
"""data key holding the publication's generation in decimal, readable without decoding the assignment."""

# -- pods ------------------------------------------------------------------------------------------------
APP_LABEL: Final = "smoothscale.io/app"
LEAVING_ANNOTATION: Final = "smoothscale.io/leaving"
"""Present (any value) on a pod that is leaving: the operator is moving its tasks away before removing it."""
ZONE_LABEL: Final = "topology.kubernetes.io/zone"
"""The node label that names a pod's zone (the planner's rack)."""
STATE_VOLUME: Final = "state"
"""The volume a pod keeps its state stores in (a PersistentVolumeClaim when the app asks for storage)."""

# -- environment of a pod (set by the operator, read by the client and the sample worker) --------------
POD_NAME_ENV: Final = "SMOOTHSCALE_POD_NAME"
NAMESPACE_ENV: Final = "SMOOTHSCALE_NAMESPACE"
APP_ENV: Final = "SMOOTHSCALE_APP"
ASSIGNMENT_CONFIGMAP_ENV: Final = "SMOOTHSCALE_ASSIGNMENT_CONFIGMAP"

# -- Prometheus metrics every pod exposes --------------------------------------------------------------------
TASK_LAG_METRIC: Final = "smoothscale_task_lag"
CHANGELOG_END_OFFSET_METRIC: Final = "smoothscale_task_changelog_end_offset"
GENERATION_METRIC: Final = "smoothscale_assignment_generation"
PROCESS_RATE_METRIC: Final = "smoothscale_task_process_rate"
TASK_LABEL: Final = "task"
DEFAULT_METRICS_PORT: Final = 8080
DEFAULT_METRICS_PATH: Final = "/metrics"


def assignment_configmap(app: str) -> str:
    """The name of an app's assignment ConfigMap."""
    return f"{app}-assignment"
