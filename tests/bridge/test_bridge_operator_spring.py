"""The Spring Boot sample under the operator (`operator_walk`): its `application.properties` adopt
smoothscale, its metrics go through Micrometer at `/actuator/prometheus`, where the StreamsApp's
`spec.metrics.path` points the operator. A module of its own: the longest sample (its start), shared out
beside the others."""

from __future__ import annotations

from pathlib import Path

import pytest
from operator_walk import Sample, ride_out

from smoothscale.sandbox.kafka.broker import KafkaCluster
from smoothscale.sandbox.kafka_streams import spring_sample_jar

pytestmark = [pytest.mark.slow, pytest.mark.timeout(900)]


def test_the_spring_boot_app_adopting_by_its_settings_alone_rides_out_scaling_crashes_and_a_swap(
    kafka_broker: KafkaCluster, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    ride_out(
        "spring-boot", Sample(spring_sample_jar, "/actuator/prometheus"), kafka_broker, tmp_path, monkeypatch
    )
