"""From a `StreamsApp` spec to what the decisions take: the planner's config (Contract 1,
docs/architecture.md) and the pod set's scaling policy.

The spec speaks Kubernetes (duration strings, percentages, settings grouped by concern); the decisions speak
seconds, pod counts and flat configs. This is the one place that translates, so that a new setting needs one
new line here and a test notices when it is missing. The operator and the simulator both go through it.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import timedelta

from smoothscale.assignor.models import PlannerConfig, RackAwareConfig

from .durations import parse_duration
from .spec import (
    AssignmentSpec,
    RackAwareSpec,
    ScalingSpec,
    StreamsAppSpec,
    SubtopologySpec,
    UpdateStrategy,
    as_duration,
)

__all__ = [
    "ScalingPolicy",
    "assignment_spec",
    "input_partition_racks",
    "max_surge_pods",
    "planner_config",
    "scaling_policy",
]


@dataclass(frozen=True)
class ScalingPolicy:
    """`spec.scaling` (and the claims' fate) in the pod set's terms."""

    strategy: UpdateStrategy
    max_surge: int
    """Extra pods allowed while replacing pods (maxSurge; a percentage of `replicas`, rounded up)."""
    scale_down_timeout: float | None
    """Seconds after which a leaving pod goes even if nobody caught up on its tasks (None: never)."""
    stabilization: timedelta | None
    """scaleDownStabilization: how long a scale-down may wait for warmups in flight (None: off)."""
    delete_claims: bool
    """A retired pod's state claim goes with it (`storage.retentionPolicy.whenScaled: Delete`)."""


def max_surge_pods(max_surge: int | str, replicas: int) -> int:
    """Extra pods allowed for `replicas`; a percentage rounds up, as Kubernetes rounds maxSurge."""
    if isinstance(max_surge, int):
        return max_surge
    return math.ceil(replicas * int(max_surge.rstrip("%")) / 100)


def scaling_policy(scaling: ScalingSpec, replicas: int, *, delete_claims: bool = False) -> ScalingPolicy:
    """The pod set's policy for `scaling` at `replicas` (which must have passed validation)."""
    window = scaling.scale_down_stabilization
    return ScalingPolicy(
        strategy=scaling.update_strategy,
        max_surge=max_surge_pods(scaling.max_surge, replicas),
        scale_down_timeout=scale_down_timeout_seconds(scaling),
        stabilization=None if window is None else timedelta(seconds=parse_duration(window)),
        delete_claims=delete_claims,
    )


def scale_down_timeout_seconds(scaling: ScalingSpec) -> float | None:
    """`scaleDownTimeout` in seconds (None: no timeout), for the pod set and the planner alike."""
    timeout = scaling.scale_down_timeout
    return None if timeout is None else parse_duration(timeout)


def planner_config(spec: StreamsAppSpec) -> PlannerConfig:
    """The planner's config for `spec` (which must have passed validation: durations parse)."""
    assignment = spec.assignment
    return PlannerConfig(
        num_standbys=assignment.num_standbys,
        acceptable_recovery_lag=assignment.acceptable_recovery_lag,
        max_warmup_replicas=assignment.max_warmup_replicas,
        rack_aware=RackAwareConfig(
            strategy=assignment.rack_aware.strategy,
            traffic_cost=assignment.rack_aware.traffic_cost,
            non_overlap_cost=assignment.rack_aware.non_overlap_cost,
        ),
        scale_down_timeout_seconds=scale_down_timeout_seconds(spec.scaling),
        probing_interval_seconds=parse_duration(assignment.probing_interval),
        balance_factor=assignment.balance_factor,
        balance_by=assignment.balance_by,
        catch_up_trigger=assignment.catch_up_trigger,
    )


def assignment_spec(config: PlannerConfig) -> tuple[AssignmentSpec, str | None]:
    """The spec's `assignment` and `scaling.scaleDownTimeout` that `planner_config` reads as `config`: the
    way back, for a program that starts from a planner config (the simulator's scenarios)."""
    timeout = config.scale_down_timeout_seconds
    assignment = AssignmentSpec(
        num_standbys=config.num_standbys,
        acceptable_recovery_lag=config.acceptable_recovery_lag,
        max_warmup_replicas=config.max_warmup_replicas,
        rack_aware=RackAwareSpec.model_validate(config.rack_aware.model_dump()),
        probing_interval=as_duration(config.probing_interval_seconds),
        balance_factor=config.balance_factor,
        balance_by=config.balance_by,
        catch_up_trigger=config.catch_up_trigger,
    )
    return assignment, None if timeout is None else as_duration(timeout)


def input_partition_racks(
    spec: StreamsAppSpec,
    subtopology: SubtopologySpec,
    partition: int,
    read: Mapping[str, Sequence[Sequence[str]]] | None = None,
) -> list[list[str]]:
    """A task's `inputPartitionRacks` from the racks `read` from Kafka, overridden per topic by the spec's
    static `racks` map.

    Task `<name>_<p>` reads partition p of each of its subtopology's input topics (Kafka Streams
    co-partitions them). Topics neither covers are left out, and an empty result means "no rack
    information", as the planner expects.
    """
    known = {**(read or {}), **spec.racks}
    racks: list[list[str]] = []
    for topic in subtopology.input_topics:
        per_partition = known.get(topic)
        if per_partition is not None and partition < len(per_partition):
            racks.append(list(per_partition[partition]))
    return racks
