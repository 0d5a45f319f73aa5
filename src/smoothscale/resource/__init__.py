"""The `StreamsApp` resource (Contract 2, docs/architecture.md): models, validation, planner config.

Import from here; the submodules each hold one concern (`spec`, `autoscaling`, `kafka`, `status`,
`kafkastatus`, `app`, `validation`, `planner`, `openapi`, `names`, `fields`).
"""

from .app import StreamsApp
from .autoscaling import AutoscalingMode, AutoscalingSpec, AutoscalingTarget
from .kafka import GroupProtocol, KafkaSecretRef, KafkaSpec, SaslMechanism, SecurityProtocol
from .kafkastatus import ChangelogStatus, ConsumerGroupMember, ConsumerGroupStatus, KafkaStatus
from .planner import (
    ScalingPolicy,
    assignment_spec,
    input_partition_racks,
    planner_config,
    scale_down_timeout_seconds,
    scaling_policy,
)
from .spec import (
    AssignmentSpec,
    MetricNames,
    MetricsSpec,
    PodSpecShape,
    PodTemplate,
    RackAwareSpec,
    Runtime,
    ScalingSpec,
    StorageSpec,
    StreamsAppSpec,
    SubtopologySpec,
    TopologySpec,
    UpdateStrategy,
)
from .status import (
    AssignmentStatus,
    AutoscalingStatus,
    Condition,
    ConditionStatus,
    ConditionType,
    LagStatus,
    LearnedSubtopologyStatus,
    LeavingPod,
    Phase,
    ProbingStatus,
    StreamsAppStatus,
)
from .validation import InvalidSpecError, load_spec, semantic_problems, spec_problems

__all__ = [
    "AssignmentSpec",
    "AssignmentStatus",
    "AutoscalingMode",
    "AutoscalingSpec",
    "AutoscalingStatus",
    "AutoscalingTarget",
    "ChangelogStatus",
    "Condition",
    "ConditionStatus",
    "ConditionType",
    "ConsumerGroupMember",
    "ConsumerGroupStatus",
    "GroupProtocol",
    "InvalidSpecError",
    "KafkaSecretRef",
    "KafkaSpec",
    "KafkaStatus",
    "LagStatus",
    "LearnedSubtopologyStatus",
    "LeavingPod",
    "MetricNames",
    "MetricsSpec",
    "Phase",
    "PodSpecShape",
    "PodTemplate",
    "ProbingStatus",
    "RackAwareSpec",
    "Runtime",
    "SaslMechanism",
    "ScalingPolicy",
    "ScalingSpec",
    "SecurityProtocol",
    "StorageSpec",
    "StreamsApp",
    "StreamsAppSpec",
    "StreamsAppStatus",
    "SubtopologySpec",
    "TopologySpec",
    "UpdateStrategy",
    "assignment_spec",
    "input_partition_racks",
    "load_spec",
    "planner_config",
    "scale_down_timeout_seconds",
    "scaling_policy",
    "semantic_problems",
    "spec_problems",
]
