"""Every library scenario, under every strategy, keeps the invariants at every step and ends balanced.

The engine checks the invariants itself at every instant anything changes (and raises at the first
violation): no task active on two running pods, no generation listing a task active twice, a leaving pod
removed only when empty or timed out, and every task processed at the end. These tests run the whole
library with the checks on, and make sure the checks do catch a broken hand-over.
"""

from __future__ import annotations

import pytest
from sim_testkit import SCENARIO_FILES, library_scenario, small_scenario

from smoothscale.contract.publication import ClientAssignment, Publication
from smoothscale.control import handover
from smoothscale.simulation import STRATEGY_NAMES, InvariantViolation, simulate


@pytest.mark.parametrize("strategy", STRATEGY_NAMES)
@pytest.mark.parametrize("name", [path.stem for path in SCENARIO_FILES])
def test_library_scenario_keeps_invariants_and_ends_balanced(name: str, strategy: str) -> None:
    result = simulate(library_scenario(name), strategy, seed=0, check_invariants=True)
    assert result.balanced, f"{name}/{strategy} did not reach balance: {result.events}"
    assert all(event.balanced_at is not None for event in result.events[-1:])


def test_library_has_every_seed_example_and_the_realistic_ones() -> None:
    names = {path.stem for path in SCENARIO_FILES}
    assert {
        "kip441-scale-out",
        "kip441-scale-in-standbys-in-sync",
        "kip441-scale-in-standbys-lagging",
        "draft-scale-up",
        "draft-scale-down",
        "draft-scale-down-timeout",
        "draft-host-swap",
        "draft-leader-crash",
        "scale-out-3-to-6",
        "scale-in-6-to-3",
        "host-swap-4-pods",
        "zone-outage-1-standby",
    } <= names


def _unsafe_publication(
    published: Publication,
    desired: dict[str, ClientAssignment],
    acked: object,
    alive: object,
    ready: object = None,
    max_warmups: int | None = None,
) -> Publication | None:
    """A hand-over without its first phase: publishes the desired assignment as it is."""
    if dict(published.assignment) == dict(desired):
        return None
    return Publication(generation=published.generation + 1, assignment=dict(desired))


def test_a_one_phase_hand_over_is_caught(monkeypatch: pytest.MonkeyPatch) -> None:
    """Pods take 0 to 2 s to apply a generation. Publishing moves in one step lets a new owner start before
    the old one has stopped: the checker must see a task active on two pods."""
    monkeypatch.setattr(handover, "next_publication", _unsafe_publication)  # the core's hand-over
    scenario = small_scenario(
        operator={"applyDelaySeconds": 0, "applyJitterSeconds": 2},
        topology={"subtopologies": [{"partitions": 12, "changelogRecords": 0}]},
        events=[{"at": 65, "type": "scaleOut", "pods": 3}],
    )
    with pytest.raises(InvariantViolation, match="active on"):
        simulate(scenario, "smoothscale", seed=1)  # seed 1: a new owner applies before the old one
