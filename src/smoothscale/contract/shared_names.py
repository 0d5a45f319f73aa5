"""The names the operator and an app's pods share (Contract 3), and where the `StreamsApp` kind lives.

Their one home: this is the lowest layer that both the operator and the client library (which runs in the
app's pods) import, so the operator's `control/object_names.py` and `resource/api_kind.py`, the sandbox, the
API emulator and the CLI all read them from here, and a string typed twice cannot drift.
"""

from __future__ import annotations

from typing import Final

# -- the StreamsApp resource (Contract 2) in the Kubernetes API -------------------------------------------
GROUP: Final = "smoothscale.io"
VERSION: Final = "v1alpha1"
API_VERSION: Final = f"{GROUP}/{VERSION}"
KIND: Final = "StreamsApp"
PLURAL: Final = "streamsapps"

# -- the assignment ConfigMap --------------------------------------------------------------------------------
ASSIGNMENT_KEY: Final = "assignment.json.gz"
"""binaryData key holding `smoothscale.contract.configmap.encode_publication` bytes (base64 in the API)."""
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
METRICS_PORT_ENV: Final = "SMOOTHSCALE_METRICS_PORT"
"""`spec.metrics.port`: where the operator scrapes the pod (the client library and the bridge serve there)."""
STATE_DIR_ENV: Final = "SMOOTHSCALE_STATE_DIR"
"""Where the container mounts the state volume: the directory its state stores must live in."""
DEFAULT_STATE_DIR: Final = "/var/lib/smoothscale/state"
"""Where the operator mounts the state volume in the first container if no template container does."""

# -- the pods' leases (`spec.failover.leaseSeconds`, docs/failover.md) ---------------------------------------
LEASE_SECONDS_ENV: Final = "SMOOTHSCALE_LEASE_SECONDS"
"""`spec.failover.leaseSeconds`, set by the operator when the app has one: the pod then renews a
`coordination.k8s.io/v1` Lease (`pod_lease`) and processes its actives only while it holds it."""
LEASE_LABEL: Final = APP_LABEL
"""The label (value: the app's name) on every pod's Lease, by which the operator lists an app's Leases."""
TAKEN_AT_GENERATION_ANNOTATION: Final = "smoothscale.io/taken-at-generation"
"""Set by the operator on a Lease it took from a pod whose lease expired (its holder then empty): the
generation in force when it took it. The pod may renew again, but resumes actives only from a later
generation (the one that failed them over, or any after it)."""
WAITING_FOR_GENERATION_ANNOTATION: Final = "smoothscale.io/waiting-for-generation"
"""Set by a pod on the Lease it took back after the operator's take: the first generation it may resume
from. While the generation in force is older (the take's generation was never followed: its publication
failed, and the pod came back before the next), the operator publishes the next one."""

# -- Prometheus metrics every pod exposes --------------------------------------------------------------------
TASK_LAG_METRIC: Final = "smoothscale_task_lag"
CHANGELOG_END_OFFSET_METRIC: Final = "smoothscale_task_changelog_end_offset"
GENERATION_METRIC: Final = "smoothscale_assignment_generation"
PROCESS_RATE_METRIC: Final = "smoothscale_task_process_rate"
CONTRACT_VERSION_METRIC: Final = "smoothscale_contract_version"
"""The contract version the pod's reports follow (`contract.version`); absent from pods before versions: 1."""
# Optional, for `spec.autoscaling` (docs/autoscaling.md): the fraction of the last tick the pod's processing
# threads were busy (0..1: its capacity is what it processed divided by it), and each active task's input
# records not yet processed (the consumer lag of its input partitions).
BUSY_RATIO_METRIC: Final = "smoothscale_pod_busy_ratio"
INPUT_LAG_METRIC: Final = "smoothscale_task_input_lag"
# Reported by the Kafka Streams bridge only (`bridge/smoothscale-streams`): rebalances its assignor led
# without following the plan as published, by reason (a counter: samples end in `_total`), those it led
# with the plan except for the actives of pods gone from the group, which ran where their most caught-up
# copy was (fail-overs, a counter), and the app's topology as the group leader saw it (labels subtopology,
# stateful, input_topics, changelog_topics; value: partitions).
ASSIGNOR_FALLBACKS_METRIC: Final = "smoothscale_bridge_assignor_fallbacks_total"
ASSIGNOR_FAILOVERS_METRIC: Final = "smoothscale_bridge_assignor_failovers_total"
TOPOLOGY_PARTITIONS_METRIC: Final = "smoothscale_bridge_topology_partitions"
TASK_LABEL: Final = "task"
DEFAULT_METRICS_PORT: Final = 8080
"""The metrics port of a pod running the client library, unless `spec.metrics.port` says otherwise."""
BRIDGE_METRICS_PORT: Final = 9494
"""The port the Kafka Streams bridge serves its metrics on unless told otherwise (`BridgeSettings`): the
default of `spec.metrics.port` for `runtime: KafkaStreams`."""
DEFAULT_METRICS_PATH: Final = "/metrics"


def assignment_configmap(app: str) -> str:
    """The name of an app's assignment ConfigMap."""
    return f"{app}-assignment"


def pod_lease(pod: str) -> str:
    """The name of a pod's Lease (in the app's namespace): its holder renews it while it may process."""
    return f"{pod}-smoothscale"
