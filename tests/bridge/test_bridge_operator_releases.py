"""Releases side by side under running apps (issue 34), through the walk of `operator_walk`: the plain app as
the first versioned release built it (its sample jar and bridge, built from its sources) under this operator,
and this plain app under that release's operator (its packages on the operator process's PYTHONPATH)."""

from __future__ import annotations

from pathlib import Path

import pytest
from operator_walk import Sample, ride_out
from versions_testkit import FIRST_VERSIONED, release_path, release_sample_jar

from smoothscale.sandbox.kafka.broker import KafkaCluster

pytestmark = [pytest.mark.slow, pytest.mark.timeout(900)]

SAMPLES = {
    "first-versioned-bridge": Sample(lambda: release_sample_jar(FIRST_VERSIONED), "/metrics"),
    "under-first-versioned-operator": Sample(None, "/metrics", lambda: release_path(FIRST_VERSIONED)),
}


@pytest.mark.parametrize("name", sorted(SAMPLES))
def test_an_app_adopting_by_its_settings_alone_rides_out_scaling_crashes_and_a_swap(
    name: str, kafka_broker: KafkaCluster, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    ride_out(name, SAMPLES[name], kafka_broker, tmp_path, monkeypatch)
