"""From a `StreamsApp` spec to what the planner takes (Contract 1, docs/architecture.md).

The spec speaks Kubernetes (duration strings, settings grouped by concern); the planner speaks seconds and a
flat config. This is the one place that translates, so that a new planner setting needs one new line here
and a test notices when it is missing.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from smoothscale.assignor.models import PlannerConfig, RackAwareConfig

from .durations import parse_duration
from .spec import StreamsAppSpec, SubtopologySpec

__all__ = ["input_partition_racks", "planner_config"]


def planner_config(spec: StreamsAppSpec) -> PlannerConfig:
    """The planner's config for `spec` (which must have passed validation: durations parse)."""
    assignment = spec.assignment
    timeout = spec.scaling.scale_down_timeout
    return PlannerConfig(
        num_standbys=assignment.num_standbys,
        acceptable_recovery_lag=assignment.acceptable_recovery_lag,
        max_warmup_replicas=assignment.max_warmup_replicas,
        rack_aware=RackAwareConfig(
            strategy=assignment.rack_aware.strategy,
            traffic_cost=assignment.rack_aware.traffic_cost,
            non_overlap_cost=assignment.rack_aware.non_overlap_cost,
        ),
        scale_down_timeout_seconds=None if timeout is None else parse_duration(timeout),
        probing_interval_seconds=parse_duration(assignment.probing_interval),
        balance_factor=assignment.balance_factor,
        balance_by=assignment.balance_by,
        catch_up_trigger=assignment.catch_up_trigger,
    )


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
