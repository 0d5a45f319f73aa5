"""The operator drives real Kafka Streams pods (`operator_walk`): each of the three samples adopts smoothscale
by its settings alone and rides out a scale-out, a scale-in, two crashes and a swap, every order counted
once. The plain app (`PlainOrdersApp`, its metrics on the bridge's own endpoint), the Spring Boot app and the
Quarkus app (their `application.properties`, their metrics through Micrometer at `/actuator/prometheus` and
`/q/metrics`, where the StreamsApp's `spec.metrics.path` points the operator): the same topology in all
three, so the same checks. The Spring Boot sample, the longest, in `test_bridge_operator_spring.py`.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from operator_walk import Sample, ride_out

from smoothscale.sandbox.kafka.broker import KafkaCluster
from smoothscale.sandbox.kafka_streams import quarkus_sample_jar

# The plain app about 2 minutes alone, a framework's a little more (its start); on a machine shared with other
# test runs one took 8 to 11 (reading the totals last).
pytestmark = [pytest.mark.slow, pytest.mark.timeout(900)]

SAMPLES = {"plain": Sample(None, "/metrics"), "quarkus": Sample(quarkus_sample_jar, "/q/metrics")}


@pytest.mark.parametrize("name", sorted(SAMPLES))
def test_an_app_adopting_by_its_settings_alone_rides_out_scaling_crashes_and_a_swap(
    name: str, kafka_broker: KafkaCluster, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    ride_out(name, SAMPLES[name], kafka_broker, tmp_path, monkeypatch)
