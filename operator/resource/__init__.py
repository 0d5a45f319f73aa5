"""The `StreamsApp` resource (Contract 2, docs/architecture.md): models, validation, planner config.

Import from here; the submodules each hold one concern (`spec`, `status`, `app`, `validation`, `planner`,
`openapi`, `names`, `fields`).
"""

from .app import StreamsApp
from .planner import input_partition_racks, planner_config
from .spec import (
    AssignmentSpec,
    MetricNames,
    MetricsSpec,
    PodSpecShape,
    PodTemplate,
    RackAwareSpec,
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
    LeavingPod,
    Phase,
    ProbingStatus,
    StreamsAppStatus,
)
from .validation import InvalidSpecError, load_spec, semantic_problems, spec_problems

__all__ = [
    "AssignmentSpec",
    "AssignmentStatus",
    "AutoscalingStatus",
    "Condition",
    "ConditionStatus",
    "ConditionType",
    "InvalidSpecError",
    "LagStatus",
    "LeavingPod",
    "MetricNames",
    "MetricsSpec",
    "Phase",
    "PodSpecShape",
    "PodTemplate",
    "ProbingStatus",
    "RackAwareSpec",
    "ScalingSpec",
    "StorageSpec",
    "StreamsApp",
    "StreamsAppSpec",
    "StreamsAppStatus",
    "SubtopologySpec",
    "TopologySpec",
    "UpdateStrategy",
    "input_partition_racks",
    "load_spec",
    "planner_config",
    "semantic_problems",
    "spec_problems",
]
