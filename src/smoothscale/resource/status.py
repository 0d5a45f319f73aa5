"""The observed state of a `StreamsApp` (Contract 2, docs/architecture.md): what the operator reports.

People read it with `kubectl get/describe`, dashboards and alerts read the conditions, and autoscalers read
`replicas`, `selector` and `autoscaling`. Free-text fields (`phase`, condition `type`) are plain strings in
the schema, with the values this operator writes offered as enums in Python: an older operator must be able
to read a status that a newer one wrote with a value it does not know yet.
"""

from __future__ import annotations

from enum import StrEnum

from pydantic import Field

from .base import StatusModel
from .fields import ConditionReason, ConditionTypeName, Timestamp
from .kafkastatus import KafkaStatus

__all__ = [
    "AssignmentStatus",
    "AutoscalingStatus",
    "Condition",
    "ConditionStatus",
    "ConditionType",
    "LagStatus",
    "LeavingPod",
    "MigrationProgress",
    "Phase",
    "ProbingStatus",
    "StreamsAppStatus",
    "WarmupProgress",
]


class ConditionType(StrEnum):
    """The condition types this operator maintains."""

    READY = "Ready"
    STABLE = "Stable"
    MIGRATING = "Migrating"
    SCALING_DOWN = "ScalingDown"
    DEGRADED = "Degraded"
    INVALID_SPEC = "InvalidSpec"
    KAFKA_UNAVAILABLE = "KafkaUnavailable"
    RACK_AWARENESS_DEGRADED = "RackAwarenessDegraded"
    ASSIGNOR_FALLBACK = "AssignorFallback"
    TOPOLOGY_MISMATCH = "TopologyMismatch"
    STREAMS_ASSIGNOR_MISSING = "StreamsAssignorMissing"
    AUTOSCALING = "Autoscaling"
    """spec.autoscaling.mode Act: True while the operator sets replicas, False beside another autoscaler."""


class ConditionStatus(StrEnum):
    TRUE = "True"
    FALSE = "False"
    UNKNOWN = "Unknown"


class Phase(StrEnum):
    """A one-word summary for `kubectl get`; automation should read the conditions instead."""

    PENDING = "Pending"
    RUNNING = "Running"
    MIGRATING = "Migrating"
    SCALING_DOWN = "ScalingDown"
    DEGRADED = "Degraded"
    INVALID = "Invalid"


class Condition(StatusModel):
    """One aspect of the app's state, in the shape of metav1.Condition so generic tools understand it."""

    type: ConditionTypeName = Field(
        description="Ready, Stable, Migrating, ScalingDown, Degraded, InvalidSpec, KafkaUnavailable or "
        "RackAwarenessDegraded."
    )
    status: ConditionStatus = Field(description="True, False or Unknown.")
    observed_generation: int | None = Field(
        None, ge=0, description="The metadata.generation the condition was computed from."
    )
    last_transition_time: Timestamp = Field(description="When the status last changed.")
    reason: ConditionReason = Field(description="Why, in CamelCase, for machines.")
    message: str = Field(max_length=32768, description="Why, in words, for people.")


class AssignmentStatus(StatusModel):
    """The assignment published to the pods."""

    generation: int = Field(ge=0, description="Generation of the assignment published last.")
    config_map: str = Field(description="Name of the ConfigMap holding the assignment.")
    active_tasks: int = Field(0, ge=0, description="Tasks with an active copy.")
    standby_tasks: int = Field(0, ge=0, description="Standby copies.")
    warmup_tasks: int = Field(0, ge=0, description="Warmup copies still restoring state.")
    cross_rack_cost: int = Field(0, ge=0, description="Cross-zone traffic cost of the active tasks.")
    active_imbalance: float = Field(
        0.0, ge=0, description="Most minus fewest active tasks per unit of capacity among the pods."
    )


class ProbingStatus(StatusModel):
    """The next planning round while the assignment has not converged."""

    next_probe_time: Timestamp | None = Field(None, description="When the operator plans again.")
    reason: str | None = Field(None, description="Why another round is needed.")


class LeavingPod(StatusModel):
    """A pod that will be removed once its tasks have moved."""

    pod: str = Field(description="Name of the pod.")
    since: Timestamp = Field(description="When it was marked leaving.")
    deadline: Timestamp | None = Field(
        None, description="When its tasks move even if nobody has caught up; absent means never."
    )


class LagStatus(StatusModel):
    """How far behind the app is, in offsets, summed over its active tasks."""

    total: int = Field(0, ge=0, description="Sum of the active tasks' lags.")
    max_task: int = Field(0, ge=0, description="Largest lag of a single active task.")


class AutoscalingStatus(StatusModel):
    """Signals for an autoscaler (HPA, KEDA)."""

    migrating: bool = Field(
        False, description="True while tasks are moving: a scaling decision now would interrupt that."
    )
    recommended_replicas: int | None = Field(
        None, ge=0, description="Replicas the operator considers enough for the current load."
    )


class WarmupProgress(StatusModel):
    """One copy warming up during a migration: its state restoring on its new pod before its task moves."""

    task: str = Field(description="The task, e.g. 1_3.")
    pod: str = Field(description="The pod restoring it.")
    records_left: int = Field(ge=0, description="Changelog records it still has to restore (the pod's lag).")
    restore_rate: float | None = Field(
        None,
        ge=0,
        description="Records a second its lag falls by, as measured on its pod; absent until measured.",
    )
    estimated_completion_time: Timestamp | None = Field(
        None, description="When it should have caught up at that rate; absent until a rate is measured."
    )


class MigrationProgress(StatusModel):
    """A migration in progress (warmups restoring, moves queued behind the warmup cap, hand-overs): how far
    it is and when it should be done, updated every round."""

    start_time: Timestamp = Field(description="When the operator first found tasks to move.")
    percent: float = Field(
        ge=0, le=100, description="Records restored, in percent of the records restored and still to restore."
    )
    copies_warming: int = Field(ge=0, description="Warmup copies restoring now.")
    tasks_queued: int = Field(
        ge=0, description="Moves toward the plan's target waiting for a warmup slot (maxWarmupReplicas)."
    )
    actives_restoring: int = Field(
        0, ge=0, description="Active copies restoring before they process (moved without a warmup)."
    )
    handovers_pending: int = Field(
        ge=0, description="Revoked tasks waiting for their old owner to stop them."
    )
    records_restored: int = Field(ge=0, description="Changelog records the warming copies restored so far.")
    records_left: int = Field(
        ge=0, description="Changelog records the warming, queued and restoring copies still have to restore."
    )
    estimated_completion_time: Timestamp | None = Field(
        None,
        description="When the last task should have moved: the measured restore rates and the warmup cap "
        "applied to the copies warming, queued and restoring; absent until a restore rate is measured.",
    )
    first_estimated_completion_time: Timestamp | None = Field(
        None, description="The first estimate this migration got (what it promised)."
    )
    warmups: list[WarmupProgress] = Field(
        default_factory=list,
        description="Each warming copy's progress.",
        json_schema_extra={"x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["task", "pod"]},
    )


class LearnedSubtopologyStatus(StatusModel):
    """One subtopology as the app's group leader reported it (Kafka Streams apps, through the bridge)."""

    name: str = Field(description="The subtopology's name in task ids, e.g. 0 for task 0_3.")
    partitions: int = Field(ge=0, description="Its partitions: one task per partition.")
    stateful: bool = Field(description="Whether its tasks have state stores.")
    input_topics: list[str] = Field(default_factory=list, description="Topics its tasks read.")
    changelog_topics: list[str] = Field(
        default_factory=list,
        description="Changelog topics of its stores; none for a stateful subtopology whose stores all have "
        "logging disabled (its tasks get no standbys).",
    )


class StreamsAppStatus(StatusModel):
    """The observed state of a stream processing app."""

    observed_generation: int | None = Field(
        None, ge=0, description="The metadata.generation this status describes."
    )
    replicas: int | None = Field(None, ge=0, description="Pods that exist, leaving ones included.")
    ready_replicas: int | None = Field(None, ge=0, description="Pods that are ready.")
    selector: str | None = Field(
        None, description="Label selector of the app's pods, for the scale subresource and autoscalers."
    )
    phase: str | None = Field(
        None,
        description="Pending, Running, Migrating, ScalingDown, Degraded or Invalid; read conditions instead "
        "in automation.",
    )
    conditions: list[Condition] = Field(
        default_factory=list,
        description="Ready, Stable, Migrating, ScalingDown, Degraded, InvalidSpec, KafkaUnavailable, "
        "RackAwarenessDegraded.",
        json_schema_extra={"x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["type"]},
    )
    assignment: AssignmentStatus | None = Field(None, description="The published assignment.")
    probing: ProbingStatus | None = Field(None, description="The next planning round, if one is due.")
    leaving: list[LeavingPod] = Field(
        default_factory=list,
        description="Pods being retired.",
        json_schema_extra={"x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["pod"]},
    )
    lag: LagStatus | None = Field(None, description="Processing lag.")
    autoscaling: AutoscalingStatus | None = Field(None, description="Signals for autoscalers.")
    progress: MigrationProgress | None = Field(
        None, description="While tasks move: the migration's progress and estimated completion time."
    )
    kafka: KafkaStatus | None = Field(None, description="What was last read from Kafka (with spec.kafka).")
    topology: list[LearnedSubtopologyStatus] = Field(
        default_factory=list,
        description="The app's topology as its pods report it (Kafka Streams apps): empty until one has led "
        "a rebalance.",
    )

    def condition(self, type_: str) -> Condition | None:
        """The condition of `type_`, if set: callers keep its lastTransitionTime when its status stays."""
        return next((c for c in self.conditions if c.type == type_), None)
