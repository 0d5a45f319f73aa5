"""`smoothscale demo --kafka --app-jar` as a user runs it with an app of their own: the Spring Boot sample's
jar (built by `.ci/bridge.sh`, holding the bridge, adopting smoothscale by its `application.properties`
alone) runs as every pod's process against three brokers, through every step of the demo; its settings come
from `--app-env` (the bridge's own metrics endpoint among them, which the demo scrapes, not the framework's
Micrometer one), its input topic from `--input`. It replaces the sample app's `demo --kafka` test (the same
machinery, one JVM app instead of another). The Quarkus sample runs the same steps under the operator in
`tests/bridge/test_bridge_operator.py`, which also reads its output (every order counted once): what the demo
cannot do for an app it did not write.

The app is named as a team would name it (`--app-name shop-orders`: its StreamsApp, pods and group), and takes
settings from the pod's own variables as a pod template would, by `$(NAME)` references the kubelet expands:
its state directory below the state volume's, its client id the pod's name. Left literal, every pod would
share one directory named `$(SMOOTHSCALE_STATE_DIR)` and die on Kafka Streams' state lock, and the bridge
would refuse the client id.

The JSON figures say every step settled with every task processing on its planned owner, Kafka's view of
the group the plan and balanced, and no step saw a fallback of the bridge. Not the crash either: the killed
pod's member leaves the group after its session timeout, before its JVM is back (a Spring Boot app starts in
10 s or more), and the leader, missing a pod the plan names, fails its actives over to their caught-up
standbys and keeps the rest of the plan (counted as `failovers`, not as a fallback); when the pod is back the
operator plans for it again. The demo exits 0: what it would tell a user."""

from __future__ import annotations

from pathlib import Path

import pytest
from sandbox_e2e_kit import processes_using, run_kafka_demo

from smoothscale.sandbox.kafka_streams import spring_sample_jar

pytestmark = [pytest.mark.slow, pytest.mark.timeout(1500)]


def test_the_demo_runs_a_spring_boot_app_jar_as_every_pod(tmp_path: Path) -> None:
    args = [
        "--kafka",
        "--app-jar",
        str(spring_sample_jar()),
        "--app-name",
        "shop-orders",
        "--input",
        "orders:6:20",
        "--app-env",
        "ORDERS_TOPIC=orders",
        "--app-env",
        "TOTALS_TOPIC=totals",
        "--app-env",
        "STREAMS_SESSION_TIMEOUT_MS=10000",
        # The demo scrapes the bridge's own endpoint: the sample's Micrometer registry would serve its metrics
        # instead, so the bridge keeps its own, and the app's web server takes any free port.
        "--app-env",
        "SMOOTHSCALE_METRICS_MICROMETER=false",
        "--app-env",
        "SERVER_PORT=0",
        # Spring Boot's relaxed binding: spring.kafka.streams.state-dir and client-id from the environment.
        "--app-env",
        "SPRING_KAFKA_STREAMS_STATEDIR=$(SMOOTHSCALE_STATE_DIR)/spring",
        "--app-env",
        "SPRING_KAFKA_STREAMS_CLIENTID=$(SMOOTHSCALE_POD_NAME)",
        "--output-dir",
        str(tmp_path),
    ]
    stdout, steps = run_kafka_demo(*args)
    for name, step in steps.items():
        assert (step["fallbacks"], step["fallback_reasons"]) == (0, {}), (name, step)
    # 3 -> 6 and 6 -> 3 each move a share of the twelve tasks; each hand-over is measured.
    for name in ("scale-out", "scale-in"):
        assert steps[name]["handover_max_s"] >= steps[name]["handover_p50_s"] > 0, steps[name]
    # The operator learned the app's topology from the bridge: the repartition topic the app declares.
    read = "racks of orders, shop-orders-by-customer-repartition read from 3 brokers; KafkaUnavailable=False"
    assert read in stdout
    # Each pod kept its state in its own volume, below the directory its variables named.
    state_dirs = list((tmp_path / "sandbox").rglob("spring"))
    assert len(state_dirs) >= 6 and all((found / "shop-orders").is_dir() for found in state_dirs), state_dirs
    assert not [path for path in tmp_path.rglob("*") if "$(" in str(path)], "a reference left literal"
    logs = list((tmp_path / "sandbox").rglob("*.log"))
    assert any("Started SpringOrdersApp" in log.read_text(errors="replace") for log in logs), logs
    assert processes_using(tmp_path) == []
