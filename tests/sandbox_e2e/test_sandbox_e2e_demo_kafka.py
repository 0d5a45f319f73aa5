"""`smoothscale demo --kafka` as a user runs it: real Kafka Streams pods against three brokers walk every step
of the demo, every order is counted exactly once, Kafka's view agrees with the plan, nothing keeps running."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from sandbox_e2e_kit import processes_using

pytestmark = pytest.mark.slow

SMOOTHSCALE = str(Path(sys.executable).with_name("smoothscale"))


def test_the_kafka_demo_runs_kafka_streams_pods_through_every_step(tmp_path: Path) -> None:
    result = subprocess.run(
        [SMOOTHSCALE, "demo", "--kafka", "--output-dir", str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=1500,
        check=False,
    )
    assert result.returncode == 0, result.stdout[-4000:] + result.stderr[-3000:]
    for step in ("create", "scale-out", "scale-in", "host-swap", "pod-crash"):
        assert f"[{step}]" in result.stdout
    assert "checking the totals of" in result.stdout
    assert "KafkaUnavailable=False; cross-zone cost of the actives 0" in result.stdout
    assert "all invariants held" in result.stdout
    # The pods were JVMs of the sample app: each wrote Kafka Streams' own log.
    logs = list((tmp_path / "sandbox").rglob("*.log"))
    assert any("Starting orders app orders" in log.read_text(errors="replace") for log in logs), logs
    assert processes_using(tmp_path) == []
