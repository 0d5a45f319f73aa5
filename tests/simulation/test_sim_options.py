"""The planner options in the simulator: catchUpTrigger in the operator loop, task weights in the physics and
the figures, balanceFactor's saved moves; each option deterministic."""

from __future__ import annotations

from typing import Any

import pytest
from sim_testkit import library_scenario, small_scenario

from smoothscale.assignor.models import BalanceBy, CatchUpTrigger
from smoothscale.simulation import Scenario, ScenarioError, simulate


def with_planner(scenario: Scenario, **options: Any) -> Scenario:
    return scenario.model_copy(update={"planner": scenario.planner.model_copy(update=options)})


def multi_warmup() -> Scenario:
    """The library's 3 -> 6 scale-out with room for 6 warmups: each new pod warms several tasks at once."""
    return with_planner(library_scenario("scale-out-3-to-6"), max_warmup_replicas=6)


def test_a_scenario_sets_the_options_in_its_planner_config() -> None:
    options = {"balanceFactor": 2, "balanceBy": "weight", "catchUpTrigger": "batched"}
    planner = small_scenario(planner=options).planner
    assert (planner.balance_factor, planner.balance_by, planner.catch_up_trigger) == (
        2,
        BalanceBy.WEIGHT,
        CatchUpTrigger.BATCHED,
    )
    with pytest.raises(ScenarioError, match=r"planner\.catchUpTrigger"):
        small_scenario(planner={"catchUpTrigger": "lazy"})


def test_batched_publishes_no_more_generations_than_eager() -> None:
    eager = simulate(with_planner(multi_warmup(), catch_up_trigger=CatchUpTrigger.EAGER), "smoothscale")
    batched = simulate(with_planner(multi_warmup(), catch_up_trigger=CatchUpTrigger.BATCHED), "smoothscale")
    assert eager.balanced and batched.balanced
    assert batched.generations_published <= eager.generations_published
    caught_up = "CaughtUp"
    assert batched.plans_by_reason[caught_up] < eager.plans_by_reason[caught_up]


def test_batched_waits_for_all_of_a_pods_copies() -> None:
    """1 -> 2 pods: the new pod warms its two tasks at once, and with sizes jittered by half they finish
    apart. Eager re-plans at each catch-up, batched once, after the second; both end balanced. (The
    `replicas` change plans too, before the new pod is up: the spec changed.)"""
    topology = {"subtopologies": [{"partitions": 4, "changelogRecords": 1_000_000}], "changelogJitter": 0.5}
    scenario = small_scenario(topology=topology)
    eager = simulate(scenario, "smoothscale")
    batched = simulate(with_planner(scenario, catch_up_trigger=CatchUpTrigger.BATCHED), "smoothscale")
    assert eager.balanced and batched.balanced
    assert eager.plans_by_reason == {"SpecChanged": 1, "PodsChanged": 1, "CaughtUp": 2}
    assert batched.plans_by_reason == {"SpecChanged": 1, "PodsChanged": 1, "CaughtUp": 1}


def test_weight_balance_lowers_the_peak_pod_load() -> None:
    scenario = library_scenario("heavy-subtopology")
    by_count = simulate(with_planner(scenario, balance_by=BalanceBy.COUNT), "smoothscale")
    by_weight = simulate(with_planner(scenario, balance_by=BalanceBy.WEIGHT), "smoothscale")
    assert by_count.balanced and by_weight.balanced
    assert by_weight.peak_pod_load < by_count.peak_pod_load


def test_peak_pod_load_is_the_sum_of_weights_per_unit_of_capacity() -> None:
    """One pod with two threads runs all four tasks of weight 3 from the start: 12 / 2."""
    topology = {"subtopologies": [{"partitions": 4, "weight": 3}]}
    scenario = small_scenario(
        topology=topology, pods={"count": 1, "capacity": 2}, events=[], durationSeconds=30
    )
    assert simulate(scenario, "smoothscale").peak_pod_load == pytest.approx(6.0)


@pytest.mark.parametrize(("weight", "backlog"), [(1.0, 0.0), (4.0, (10_000 - 20_000 / 4) * 100)])
def test_a_records_processing_cost_is_its_tasks_weight(weight: float, backlog: float) -> None:
    """A pod processing 20 k records/s of weight 1 keeps up with a 10 k records/s task of weight 1, but
    processes only 5 k records/s of one of weight 4: the rest piles up as backlog."""
    topology = {
        "subtopologies": [
            {"partitions": 1, "stateful": False, "inputRecordsPerSecond": 10_000, "weight": weight}
        ]
    }
    scenario = small_scenario(topology=topology, events=[], durationSeconds=100)
    result = simulate(scenario, "smoothscale")
    assert result.timeline[-1].input_lag == pytest.approx(backlog)


def test_a_balance_tolerance_saves_moves_on_a_scale_out_by_one() -> None:
    scenario = library_scenario("scale-out-by-one")
    moved = [
        simulate(with_planner(scenario, balance_factor=f), "smoothscale").moved_actives for f in (1, 2, 3)
    ]
    assert moved[0] == 6  # 30 tasks on 5 pods: the new pod's full share
    assert moved[2] < moved[1] < moved[0]


@pytest.mark.parametrize(
    ("name", "options"),
    [
        ("scale-out-by-one", {"balance_factor": 2}),
        ("scale-out-3-to-6", {"catch_up_trigger": CatchUpTrigger.BATCHED, "max_warmup_replicas": 6}),
        ("heavy-subtopology", {"balance_by": BalanceBy.WEIGHT}),
    ],
)
def test_each_option_is_deterministic(name: str, options: dict[str, Any]) -> None:
    scenario = with_planner(library_scenario(name), **options)
    first = simulate(scenario, "smoothscale", seed=3).model_dump_json()
    assert simulate(scenario, "smoothscale", seed=3).model_dump_json() == first
