"""`smoothscale demo --kafka --app-jar` as a user runs it with an app of their own: the Spring Boot sample's jar
(built by `.ci/bridge.sh`, holding the bridge, adopting smoothscale by its `application.properties` alone)
runs as every pod's process against three brokers, through every step of the demo; its settings come from
`--app-env`, its input topic from `--input`. The JSON figures say every step settled with every task
processing on its planned owner, Kafka's view of the group the plan, balanced, with no fallback."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from sandbox_e2e_kit import DEMO_STEPS, processes_using, run_demo

from smoothscale.sandbox.kafka_streams import spring_sample_jar

pytestmark = [pytest.mark.slow, pytest.mark.timeout(1500)]


def test_the_demo_runs_a_spring_boot_apps_jar_as_every_pod(tmp_path: Path) -> None:
    stdout = run_demo(
        "--kafka",
        "--app-jar",
        str(spring_sample_jar()),
        "--input",
        "orders:6:20",
        "--app-env",
        "ORDERS_TOPIC=orders",
        "--app-env",
        "TOTALS_TOPIC=totals",
        "--app-env",
        "STREAMS_SESSION_TIMEOUT_MS=10000",
        "--json",
        "--output-dir",
        str(tmp_path),
        timeout=1400,
    )
    figures = json.loads(stdout.strip().splitlines()[-1])
    steps = figures["steps"]
    assert tuple(steps) == DEMO_STEPS
    for name, step in steps.items():
        assert step["settled_s"] is not None, name
        assert (step["fallbacks"], step["plan_matches_kafka"], step["balanced"]) == (0, True, True), (name, step)
    # 3 -> 6 moves a share of the twelve tasks onto the new pods, each after a gap the figures measure.
    assert steps["scale-out"]["moved"] >= 4
    assert steps["scale-out"]["handover_max_s"] >= steps["scale-out"]["handover_p50_s"] > 0
    # The operator learned the app's topology from the bridge: the repartition topic Spring's app declares.
    assert "racks of orders, orders-by-customer-repartition read from 3 brokers" in stdout
    logs = list((tmp_path / "sandbox").rglob("*.log"))
    assert any("Started SpringOrdersApp" in log.read_text(errors="replace") for log in logs), logs
    assert processes_using(tmp_path) == []
