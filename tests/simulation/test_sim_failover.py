"""Fail-over in the simulator (issue 40): the library's zone outage (6 pods over 3 zones, 48 tasks with one
standby each in another zone, zone-a down for 10 minutes) for both runtimes. With a lease (or, for Kafka
Streams apps, the session), each of the 16 lost actives waits one lease and one hand-over, not the outage."""

from __future__ import annotations

import pytest
from sim_testkit import library_scenario

from smoothscale.simulation import Scenario, simulate

LOST_ACTIVES = 16
"""zone-a's 2 pods held 48 / 6 actives each."""


def outage(runtime: str, lease: float | None = None) -> Scenario:
    scenario = library_scenario("zone-outage-1-standby")
    failover = scenario.failover.model_copy(update={"lease_seconds": lease})
    return scenario.model_copy(update={"runtime": runtime, "failover": failover})


def test_without_a_lease_the_lost_actives_wait_for_the_zone() -> None:
    result = simulate(outage("ClientLibrary"), "smoothscale", seed=0)
    assert result.failover_downtime_task_seconds == pytest.approx(LOST_ACTIVES * 600)
    assert result.generations_published == 0


@pytest.mark.parametrize(
    ("runtime", "lease", "wait"), [("ClientLibrary", 10.0, 10.0), ("KafkaStreams", None, 45.0)]
)
def test_lost_actives_fail_over_after_one_lease_or_session(
    runtime: str, lease: float | None, wait: float
) -> None:
    """Each lost active waits exactly the lease (the operator saw the zone's pods renew last as they went
    down) or Kafka's default session, then starts on its caught-up standby within one hand-over (a pod
    applies a generation 0.25 s after it is published). The zone's pods come back with their volumes, ten
    minutes behind, and take actives back only through caught-up warmups: no task ever waits for a
    restore, and the app balances again."""
    result = simulate(outage(runtime, lease), "smoothscale", seed=0)
    assert result.failover_downtime_task_seconds == pytest.approx(LOST_ACTIVES * wait)
    assert result.downtime_task_seconds <= LOST_ACTIVES * (wait + 1)
    assert result.restore_downtime_task_seconds == 0
    assert result.balanced
    assert result.plans_by_reason["CaughtUp"] > 0
