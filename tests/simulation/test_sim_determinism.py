"""One scenario and one seed give one result, byte for byte; the seed is what varies between runs."""

from __future__ import annotations

import pytest
from sim_testkit import library_scenario

from smoothscale.simulation import simulate


@pytest.mark.parametrize("strategy", ["eager", "smoothscale"])
def test_same_seed_same_result(strategy: str) -> None:
    scenario = library_scenario("pod-incidents")  # jittered sizes and apply delays, crashes, a drain
    first = simulate(scenario, strategy, seed=7).model_dump_json()
    assert simulate(scenario, strategy, seed=7).model_dump_json() == first


def test_another_seed_changes_the_random_choices() -> None:
    scenario = library_scenario("pod-incidents")
    one, other = simulate(scenario, "smoothscale", seed=1), simulate(scenario, "smoothscale", seed=2)
    assert one.records_restored != other.records_restored  # changelog sizes differ by seed
