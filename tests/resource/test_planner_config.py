"""The spec's assignment and scaling settings reach the planner, every one of them, in the planner's units."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel

from smoothscale.assignor.models import (
    BalanceBy,
    CatchUpTrigger,
    PlannerConfig,
    RackAwareConfig,
    RackStrategy,
)
from smoothscale.resource import assignment_spec, input_partition_racks, load_spec, planner_config

Json = dict[str, Any]


def _non_default_spec(minimal_spec: Json) -> Json:
    return {
        **minimal_spec,
        "assignment": {
            "numStandbys": 2,
            "acceptableRecoveryLag": 500,
            "maxWarmupReplicas": 5,
            "rackAware": {"strategy": "min_traffic", "trafficCost": 7, "nonOverlapCost": 3},
            "probingInterval": "1h30m",
            "balanceFactor": 2,
            "balanceBy": "weight",
            "catchUpTrigger": "batched",
        },
        "scaling": {"scaleDownTimeout": "45s"},
    }


def test_every_setting_is_translated(minimal_spec: Json) -> None:
    config = planner_config(load_spec(_non_default_spec(minimal_spec)))
    assert config == PlannerConfig(
        num_standbys=2,
        acceptable_recovery_lag=500,
        max_warmup_replicas=5,
        rack_aware=RackAwareConfig(strategy=RackStrategy.MIN_TRAFFIC, traffic_cost=7, non_overlap_cost=3),
        scale_down_timeout_seconds=45.0,
        probing_interval_seconds=5400.0,
        balance_factor=2,
        balance_by=BalanceBy.WEIGHT,
        catch_up_trigger=CatchUpTrigger.BATCHED,
    )


def test_assignment_spec_is_the_way_back(minimal_spec: Json) -> None:
    """A program that starts from a planner config (the simulator's scenarios, which run the operator's step
    on a spec) gets a spec that `planner_config` reads as that config, every setting of it."""
    config = planner_config(load_spec(_non_default_spec(minimal_spec)))
    assignment, timeout = assignment_spec(config)
    scaling = {"scaleDownTimeout": timeout}
    spec = load_spec({**minimal_spec, "assignment": assignment.model_dump(), "scaling": scaling})
    assert planner_config(spec) == config


def test_no_planner_field_is_left_at_its_default(minimal_spec: Json) -> None:
    """Fails when the planner grows a setting that the spec does not carry (or planner_config drops)."""
    config = planner_config(load_spec(_non_default_spec(minimal_spec)))
    _assert_all_fields_differ(config, PlannerConfig())
    _assert_all_fields_differ(config.rack_aware, RackAwareConfig())


def test_an_empty_assignment_section_plans_like_the_planner_alone(minimal_spec: Json) -> None:
    assert planner_config(load_spec(minimal_spec)) == PlannerConfig()


def test_example_config(example: Json) -> None:
    config = planner_config(load_spec(example["spec"]))
    assert (config.num_standbys, config.scale_down_timeout_seconds, config.probing_interval_seconds) == (
        1,
        1800.0,
        600.0,
    )


def test_static_racks_per_task(minimal_spec: Json) -> None:
    spec = load_spec(
        {
            **minimal_spec,
            "topology": {
                "subtopologies": [
                    {"name": "0", "partitions": 2, "inputTopics": ["orders", "customers"]},
                    {"name": "1", "partitions": 2, "inputTopics": ["totals"]},
                ]
            },
            "racks": {"orders": [["zone-a", "zone-b"], ["zone-c"]], "customers": [["zone-b"], []]},
        }
    )
    first, second = spec.topology.subtopologies
    assert input_partition_racks(spec, first, 0) == [["zone-a", "zone-b"], ["zone-b"]]
    assert input_partition_racks(spec, first, 1) == [["zone-c"], []]
    assert input_partition_racks(spec, second, 0) == [], "no rack information for totals"


def _assert_all_fields_differ(actual: BaseModel, default: BaseModel) -> None:
    for name in type(default).model_fields:
        assert getattr(actual, name) != getattr(default, name), (
            f"{type(default).__name__}.{name} is not mapped"
        )
