"""`smoothscale demo --kafka` as a user runs it: real Kafka Streams pods against three brokers walk every step
of the demo, every order is counted exactly once, Kafka's view agrees with the plan, nothing keeps running."""

from __future__ import annotations

from pathlib import Path

import pytest
from sandbox_e2e_kit import processes_using, run_demo

pytestmark = pytest.mark.slow


def test_the_kafka_demo_runs_kafka_streams_pods_through_every_step(tmp_path: Path) -> None:
    stdout = run_demo("--kafka", "--output-dir", str(tmp_path), timeout=1500)
    assert "checking the totals of" in stdout
    assert "KafkaUnavailable=False; cross-zone cost of the actives 0" in stdout
    # The pods were JVMs of the sample app: each wrote Kafka Streams' own log.
    logs = list((tmp_path / "sandbox").rglob("*.log"))
    assert any("Starting orders app orders" in log.read_text(errors="replace") for log in logs), logs
    assert processes_using(tmp_path) == []
