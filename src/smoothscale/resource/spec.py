"""The desired state of a `StreamsApp` (Contract 2, docs/architecture.md): what people write in a manifest.

Class docstrings and field descriptions become the CRD's descriptions, so they are written for the person
running `kubectl explain streamsapp.spec`. Defaults of the assignment section equal the planner's
(`smoothscale.assignor.models.PlannerConfig`), so an empty section plans exactly as the planner would alone.
Sections that may be left out entirely carry a schema default of `{}`: the API server then fills in their
fields' defaults too, and `kubectl get -o yaml` shows the settings actually in force. The assignment
section's defaults are read from the planner's models (`_planner_default`): written once, there.
"""

from __future__ import annotations

from enum import StrEnum
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, model_validator

from smoothscale.assignor.models import (
    BalanceBy,
    BalanceFactor,
    CatchUpTrigger,
    NumStandbys,
    PlacementCost,
    PlannerConfig,
    RackAwareConfig,
    RackStrategy,
    RecoveryLag,
    WarmupReplicas,
)
from smoothscale.contract import shared_names as contract

from .autoscaling import AutoscalingSpec
from .base import SpecModel
from .fields import Duration, HttpPath, IntOrPercent, MetricName, Quantity, SubtopologyName, TopicName, Zone
from .kafka import KafkaSpec

__all__ = [
    "AssignmentSpec",
    "ClaimRetention",
    "ClaimRetentionPolicy",
    "FailoverSpec",
    "MetricNames",
    "MetricsSpec",
    "PodSpecShape",
    "PodTemplate",
    "RackAwareSpec",
    "ScalingSpec",
    "StorageSpec",
    "StreamsAppSpec",
    "SubtopologySpec",
    "TopologySpec",
    "UpdateStrategy",
]

_EMPTY_SECTION: dict[str, Any] = {"default": {}}


def _no_schema_default(schema: dict[str, Any]) -> None:
    """A field whose default depends on another field: the API server must not fill it in."""
    schema.pop("default", None)


def _planner_default(model: type[BaseModel], name: str) -> Any:
    """The planner's default of its field `name` (Contract 1): the one place the defaults are written, so
    an empty assignment section plans exactly as the planner would alone."""
    return model.model_fields[name].default


def as_duration(seconds: float) -> str:
    """`seconds` as the spec writes a duration: 600 -> 10m."""
    for unit, size in (("h", 3600), ("m", 60)):
        if seconds >= size and seconds % size == 0:
            return f"{seconds / size:g}{unit}"
    return f"{seconds:g}s"


class Runtime(StrEnum):
    """What runs in the app's pods, which decides how a task moves between them."""

    CLIENT_LIBRARY = "ClientLibrary"
    """smoothscale's Python client library: the operator hands tasks over in two generations."""
    KAFKA_STREAMS = "KafkaStreams"
    """Kafka Streams with the smoothscale-streams bridge: Kafka's cooperative rebalance is the hand-over."""

    @property
    def metrics_port(self) -> int:
        """Where the runtime serves its metrics unless `spec.metrics.port` says otherwise: the bridge's own
        port for Kafka Streams, the client library's otherwise."""
        bridge = self is Runtime.KAFKA_STREAMS
        return contract.BRIDGE_METRICS_PORT if bridge else contract.DEFAULT_METRICS_PORT


class UpdateStrategy(StrEnum):
    """How pods are replaced when the pod template changes."""

    SWAP = "Swap"
    ROLLING_RESTART = "RollingRestart"


class PodSpecShape(BaseModel):
    """A pod spec, kept as written; only the presence of containers is checked here."""

    model_config = ConfigDict(extra="allow", frozen=True)

    containers: list[dict[str, Any]] = Field(
        min_length=1, description="The app's containers, as in any pod spec; at least one."
    )


class PodTemplate(BaseModel):
    """The pods' template, as in a Deployment's `spec.template`.

    Kept free-form because the operator only adds its labels, volumes and ordinal to it: validating the
    whole PodSpec would copy thousands of lines of Kubernetes' schema into the CRD for no gain, since the API
    server validates every pod the operator creates anyway.
    """

    model_config = ConfigDict(extra="allow", frozen=True)

    metadata: dict[str, Any] = Field(
        default_factory=dict, description="Labels and annotations for the pods (the operator adds its own)."
    )
    spec: PodSpecShape = Field(description="The pods' spec (a core/v1 PodSpec).")


class SubtopologySpec(SpecModel):
    """One subtopology of the app; its tasks are `<name>_<partition>` for every partition."""

    name: SubtopologyName = Field(
        description="Subtopology name as the app reports it in task ids, e.g. 0 for task 0_3."
    )
    partitions: int = Field(
        ge=1, description="Number of partitions of the subtopology's input topics: one task per partition."
    )
    stateful: bool = Field(
        True,
        description="Whether the tasks keep state that must be restored (and warmed up) before they move.",
    )
    input_topics: list[TopicName] = Field(
        default_factory=list,
        description="Topics the subtopology reads; their partitions' racks drive rack-aware placement.",
        json_schema_extra={"x-kubernetes-list-type": "set"},
    )
    weight: float = Field(1.0, gt=0, description="Relative processing cost of one task of this subtopology.")
    stores: list[TopicName] = Field(
        default_factory=list,
        description="The subtopology's state stores. With spec.kafka, their changelog topics "
        "(<applicationId>-<store>-changelog) give its tasks' restore sizes; a changelog of a store no "
        "subtopology lists belongs to the one stateful subtopology with as many partitions, if there is one.",
        json_schema_extra={"x-kubernetes-list-type": "set"},
    )


class TopologySpec(SpecModel):
    """The app's processing topology, as far as task placement needs it."""

    # A list map keyed by name: the API server itself rejects a repeated name (in linear time, with no CEL
    # cost budget to worry about), and server-side apply merges subtopologies by name.
    subtopologies: list[SubtopologySpec] = Field(
        default_factory=list,
        description="The subtopologies; names must be unique. Required for runtime ClientLibrary; for "
        "runtime KafkaStreams the operator learns them from the app (status.topology) when left out.",
        json_schema_extra={"x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["name"]},
    )


class RackAwareSpec(SpecModel):
    """Rack-aware (zone-aware) placement, as in KIP-925: a zone is a rack."""

    strategy: RackStrategy = Field(
        _planner_default(RackAwareConfig, "strategy"),
        description="none (zones ignored; every subtopology spread evenly), min_traffic (least "
        "cross-zone traffic; subtopologies may cluster) or balance_subtopology (least cross-zone traffic "
        "while spreading each subtopology evenly).",
    )
    traffic_cost: PlacementCost = Field(
        _planner_default(RackAwareConfig, "traffic_cost"),
        description="Cost of a task reading an input partition from another zone.",
    )
    non_overlap_cost: PlacementCost = Field(
        _planner_default(RackAwareConfig, "non_overlap_cost"),
        description="Cost of moving a task away from the pod that holds it now.",
    )


class AssignmentSpec(SpecModel):
    """How tasks are assigned to pods: standbys, catch-up threshold, warmups, zones, probing."""

    model_config = ConfigDict(
        json_schema_extra={
            "x-kubernetes-validations": [
                {
                    # CEL's duration() is Go's parser, the grammar DURATION_PATTERN mirrors. has(): the API
                    # server also checks the section's default ({}) by this rule, without the inner defaults.
                    "rule": "!has(self.probingInterval) || duration(self.probingInterval) >= duration('1s')",
                    "message": "probingInterval must be at least 1s",
                    "fieldPath": ".probingInterval",
                }
            ]
        }
    )

    num_standbys: NumStandbys = Field(
        _planner_default(PlannerConfig, "num_standbys"),
        description="Standby replicas per stateful task (num.standby.replicas).",
    )
    acceptable_recovery_lag: RecoveryLag = Field(
        _planner_default(PlannerConfig, "acceptable_recovery_lag"),
        description="Lag (offsets) at or below which a pod counts as caught up on a task and may take it "
        "over without downtime (acceptable.recovery.lag).",
    )
    max_warmup_replicas: WarmupReplicas = Field(
        _planner_default(PlannerConfig, "max_warmup_replicas"),
        description="Warmup replicas allowed at once across the app (max.warmup.replicas): more move state "
        "faster but load the brokers more.",
    )
    rack_aware: RackAwareSpec = Field(
        default_factory=RackAwareSpec,
        description="Zone-aware placement.",
        json_schema_extra=_EMPTY_SECTION,
    )
    probing_interval: Duration = Field(
        as_duration(_planner_default(PlannerConfig, "probing_interval_seconds")),
        description="How long to wait before planning again while warmups catch up "
        "(probing.rebalance.interval.ms), e.g. 10m; at least 1s.",
    )
    balance_factor: BalanceFactor = Field(
        _planner_default(PlannerConfig, "balance_factor"),
        description="Loads per unit of capacity may differ by this many tasks before the planner moves one "
        "only to balance (stream.balancing.factor); 1 is strict balance.",
    )
    balance_by: BalanceBy = Field(
        _planner_default(PlannerConfig, "balance_by"),
        description="count: balance task counts per pod. weight: balance the sum of task weights (measured "
        "processing rates, else the subtopology's weight).",
    )
    catch_up_trigger: CatchUpTrigger = Field(
        _planner_default(PlannerConfig, "catch_up_trigger"),
        description="eager: plan again as soon as any warmup is caught up. batched: only once all warmups of "
        "a pod are (learn.partial.rebalance=false).",
    )


# has(): the API server also checks the section's default ({}) by this rule, without the inner defaults;
# on an object both fields are always there (defaulted).
_SWAP_NEEDS_SURGE = (
    "!has(self.updateStrategy) || !has(self.maxSurge) || self.updateStrategy != 'Swap' || "
    "(type(self.maxSurge) == int ? self.maxSurge > 0 : !self.maxSurge.matches('^0+%$'))"
)


class ScalingSpec(SpecModel):
    """How pods are removed and replaced."""

    model_config = ConfigDict(
        json_schema_extra={
            "x-kubernetes-validations": [
                {
                    "rule": _SWAP_NEEDS_SURGE,
                    "message": "maxSurge must allow at least one extra pod when updateStrategy is Swap",
                    "fieldPath": ".maxSurge",
                }
            ]
        }
    )

    scale_down_timeout: Duration | None = Field(
        None,
        description="How long a leaving pod may wait for another pod to catch up on its tasks before they "
        "move anyway (accepting a restore); absent means wait as long as it takes.",
    )
    update_strategy: UpdateStrategy = Field(
        UpdateStrategy.SWAP,
        description="Swap: start new pods, warm them up, then retire the old ones (no downtime, needs "
        "surge). RollingRestart: restart pods one at a time in place.",
    )
    max_surge: IntOrPercent = Field(
        "100%",
        description="Extra pods allowed above replicas during a swap: a number or a percentage of replicas "
        "(rounded up).",
    )
    scale_down_stabilization: Duration | None = Field(
        None,
        description="Hold a scale-down that arrives while warmups are in flight until they finish, for at "
        "most this long (damps a flapping autoscaler; the held scale-down may then move tasks that just "
        "moved). Absent: a scale-down re-targets the migration at once.",
    )


class ClaimRetention(StrEnum):
    """What becomes of a state claim when its pod goes for good (a StatefulSet's retention values)."""

    RETAIN = "Retain"
    DELETE = "Delete"


class ClaimRetentionPolicy(SpecModel):
    """When the state claims are deleted, as a StatefulSet's persistentVolumeClaimRetentionPolicy: by
    default never, so that a mistake (a deleted StreamsApp, a scale-down too far) costs no state."""

    when_deleted: ClaimRetention = Field(
        ClaimRetention.RETAIN,
        description="When the StreamsApp is deleted. Retain: the claims stay, and a StreamsApp of the same "
        "name created again mounts them (its pods find their state); Delete: they go with the app.",
    )
    when_scaled: ClaimRetention = Field(
        ClaimRetention.RETAIN,
        description="When a scale-down retires a pod. Retain: its claim stays for a later scale-up to the "
        "same ordinal; Delete: it goes with the pod.",
    )


class StorageSpec(SpecModel):
    """A PersistentVolumeClaim per pod ordinal for the state stores; without it state lives in emptyDir."""

    size: Quantity = Field(description="Requested storage per pod, e.g. 10Gi.")
    storage_class_name: str | None = Field(
        None, description="StorageClass of the claims; absent means the cluster's default class."
    )
    retention_policy: ClaimRetentionPolicy = Field(
        default_factory=ClaimRetentionPolicy,
        description="When the claims are deleted (whenDeleted, whenScaled: Retain or Delete).",
        json_schema_extra=_EMPTY_SECTION,
    )

    @property
    def deletes_on_scale_down(self) -> bool:
        return self.retention_policy.when_scaled is ClaimRetention.DELETE

    @property
    def deletes_with_app(self) -> bool:
        return self.retention_policy.when_deleted is ClaimRetention.DELETE


class MetricNames(SpecModel):
    """Names of the metrics the operator scrapes, for apps that export them under other names."""

    task_lag: MetricName = Field(
        contract.TASK_LAG_METRIC, description="Per-task lag gauge, label task=<subtopology>_<partition>."
    )
    changelog_end_offset: MetricName = Field(
        contract.CHANGELOG_END_OFFSET_METRIC,
        description="Per-task changelog end offset gauge, label task=<subtopology>_<partition>.",
    )
    assignment_generation: MetricName = Field(
        contract.GENERATION_METRIC,
        description="Gauge of the last assignment generation the pod has fully applied.",
    )
    task_process_rate: MetricName = Field(
        contract.PROCESS_RATE_METRIC,
        description="Per-task gauge of records processed per second, label task=<subtopology>_<partition>; "
        "the task weights of balanceBy: weight.",
    )


class MetricsSpec(SpecModel):
    """Where each pod exposes its Prometheus metrics."""

    port: int = Field(
        contract.DEFAULT_METRICS_PORT,
        ge=1,
        le=65535,
        description=f"Container port of the metrics endpoint. Unless set: {contract.DEFAULT_METRICS_PORT} "
        f"(the client library's), {contract.BRIDGE_METRICS_PORT} (the bridge's) for runtime KafkaStreams. "
        f"Every pod gets it as {contract.METRICS_PORT_ENV}.",
        json_schema_extra=_no_schema_default,
    )
    path: HttpPath = Field(contract.DEFAULT_METRICS_PATH, description="HTTP path of the metrics endpoint.")
    names: MetricNames = Field(
        default_factory=MetricNames,
        description="Metric names, if the app does not use the default ones.",
        json_schema_extra=_EMPTY_SECTION,
    )


MIN_LEASE_SECONDS = 3
"""The shortest lease: a pod renews every third of it (1 s here), and a renewal's round trip to the API
server, a garbage-collection pause or a slow API server must stay well within that third, or healthy pods
fence themselves. The operator times leases by its rounds (every 5 s by default, `scrape_interval`): a lease
shorter than that wakes it for every expiry it times, so its rounds come more often than the interval."""
MAX_LEASE_SECONDS = 1800
"""The longest lease: Kafka's own bound on a member's session (`group.max.session.timeout.ms`, 30 min by
default); a lost pod's tasks wait that long before they start elsewhere."""


class FailoverSpec(SpecModel):
    """When a lost pod's tasks start elsewhere (docs/failover.md)."""

    lease_seconds: int | None = Field(
        None,
        ge=MIN_LEASE_SECONDS,
        le=MAX_LEASE_SECONDS,
        description="runtime ClientLibrary only: each pod renews a coordination.k8s.io Lease every third of "
        "this and processes its actives only while it holds it; once the operator has seen no renewal "
        "for this long it takes the pod's Lease and fails its actives over to their most caught-up copies. "
        f"{MIN_LEASE_SECONDS} to {MAX_LEASE_SECONDS}; 10 or more is advised (below the operator's round "
        f"interval, 5s by default, it wakes for each expiry). Pods get it as {contract.LEASE_SECONDS_ENV} "
        "when they are created (pods created before it was set keep no lease: restart or swap them). "
        "Absent: no lease; a silent pod that holds tasks holds planning until it comes back. runtime "
        "KafkaStreams apps fail over through their consumer group's session.timeout.ms instead.",
    )


# has(): the API server also checks the section's default ({}) by this rule; runtime is always there
# (defaulted).
_LEASE_NEEDS_CLIENT_LIBRARY = (
    "!has(self.failover) || !has(self.failover.leaseSeconds) || !has(self.runtime) || "
    "self.runtime != 'KafkaStreams'"
)


class StreamsAppSpec(SpecModel):
    """The desired state of a stream processing app."""

    model_config = ConfigDict(
        json_schema_extra={
            "x-kubernetes-validations": [
                {
                    "rule": _LEASE_NEEDS_CLIENT_LIBRARY,
                    "message": "failover.leaseSeconds is for runtime ClientLibrary only: a KafkaStreams app "
                    "fails over through its consumer group's session.timeout.ms",
                    "fieldPath": ".failover",
                }
            ]
        }
    )

    replicas: int = Field(1, ge=0, description="Number of pods (not counting surge during a swap).")
    runtime: Runtime = Field(
        Runtime.CLIENT_LIBRARY,
        description="ClientLibrary (smoothscale's client library: tasks move in two generations, revoke then "
        "assign) or KafkaStreams (a Kafka Streams app with the smoothscale-streams bridge: each plan is "
        "published at once, Kafka's cooperative rebalance revokes a task before it starts elsewhere).",
    )
    template: PodTemplate = Field(description="Template of the app's pods.")
    topology: TopologySpec = Field(
        default_factory=TopologySpec,
        description="The app's subtopologies, which define its tasks. Optional for runtime KafkaStreams: the "
        "bridge reports the app's own topology, which the operator then plans with.",
    )
    assignment: AssignmentSpec = Field(
        default_factory=AssignmentSpec,
        description="Task assignment settings.",
        json_schema_extra=_EMPTY_SECTION,
    )
    scaling: ScalingSpec = Field(
        default_factory=ScalingSpec,
        description="Scale-down and update settings.",
        json_schema_extra=_EMPTY_SECTION,
    )
    storage: StorageSpec | None = Field(None, description="Persistent storage for state; optional.")
    metrics: MetricsSpec = Field(
        default_factory=MetricsSpec,
        description="The pods' metrics endpoint.",
        json_schema_extra=_EMPTY_SECTION,
    )
    racks: dict[str, list[list[Zone]]] = Field(
        default_factory=dict,
        description="Static rack information: input topic -> one entry per partition (index = partition "
        "number) -> zones holding a replica of that partition. With spec.kafka the racks are read from "
        "Kafka; a topic listed here overrides what Kafka says.",
    )
    kafka: KafkaSpec | None = Field(
        None,
        description="The app's Kafka cluster: the operator reads input partitions' racks, changelog end "
        "offsets and the consumer group from it. Absent: Kafka is not read.",
    )
    autoscaling: AutoscalingSpec = Field(
        default_factory=AutoscalingSpec,
        description="The operator's autoscaler: Recommend (status.autoscaling only, the default) or Act (it "
        "sets spec.replicas itself), its bounds and its target (docs/autoscaling.md).",
        json_schema_extra=_EMPTY_SECTION,
    )
    failover: FailoverSpec = Field(
        default_factory=FailoverSpec,
        description="When a lost pod's tasks start elsewhere: leaseSeconds, the pods' lease "
        "(runtime ClientLibrary; docs/failover.md).",
        json_schema_extra=_EMPTY_SECTION,
    )

    @model_validator(mode="before")
    @classmethod
    def _runtime_metrics_port(cls, data: Any) -> Any:
        """`metrics.port` unless set is the runtime's (`Runtime.metrics_port`): a Kafka Streams app's pods are
        scraped where the bridge serves without a word in the spec."""
        if not isinstance(data, dict):
            return data
        try:
            runtime = Runtime(data.get("runtime") or Runtime.CLIENT_LIBRARY)
        except ValueError:
            return data  # the field's own validation says what is wrong
        metrics = data.get("metrics")
        if isinstance(metrics, MetricsSpec) and "port" not in metrics.model_fields_set:
            return {**data, "metrics": metrics.model_copy(update={"port": runtime.metrics_port})}
        if metrics is None or (isinstance(metrics, dict) and metrics.get("port") is None):
            return {**data, "metrics": {**(metrics or {}), "port": runtime.metrics_port}}
        return data

    def subtopology(self, name: str) -> SubtopologySpec | None:
        """The subtopology called `name`, for looking up a task's `<name>_<partition>`."""
        return next((s for s in self.topology.subtopologies if s.name == name), None)
