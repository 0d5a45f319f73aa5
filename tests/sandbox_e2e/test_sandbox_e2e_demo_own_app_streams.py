"""`smoothscale demo --kafka --group-protocol streams --app-jar` as a team on Kafka 4.4's streams protocol
runs it with an app of its own: three 4.4.0 brokers, each with smoothscale's streams assignor (KIP-1357),
and the user's jars as every pod's process. The app here is the sample's topology on Kafka Streams 4.4.0,
given as a user gives jars (Kafka Streams and its client ahead of the app's, its main class named), named
`shop`, and configured for the streams protocol by its own settings: `group.protocol=streams`, no bridge,
and its client id, the client tags that name its app and pod for the brokers' plugin and its state
directory taken from the operator's variables by `$(NAME)` references, which the kubelet expands. No pod
serves metrics: the demo reads what each pod runs from Kafka's view of the group. The same per-step checks
and `--json` line as on the classic protocol: every step settled balanced with Kafka's view the plan, the
scale steps moved tasks."""

from __future__ import annotations

from pathlib import Path

import pytest
from sandbox_e2e_kit import processes_using, run_kafka_demo

from smoothscale.sandbox.kafka_streams import streams_protocol_app

pytestmark = [pytest.mark.slow, pytest.mark.timeout(1500)]

SETTINGS = {
    "ORDERS_TOPIC": "orders",
    "TOTALS_TOPIC": "totals",
    "SMOOTHSCALE_BRIDGE": "off",
    "STREAMS_GROUP_PROTOCOL": "streams",
    "STREAMS_CLIENT_ID": "$(SMOOTHSCALE_POD_NAME)",
    "STREAMS_CLIENT_TAG_SMOOTHSCALE_APP": "$(SMOOTHSCALE_APP)",
    "STREAMS_CLIENT_TAG_SMOOTHSCALE_POD": "$(SMOOTHSCALE_POD_NAME)",
    "STREAMS_STATE_DIR": "$(SMOOTHSCALE_STATE_DIR)/streams",
}
"""The sample reads any Streams setting as `STREAMS_<NAME>` (`client.tag.smoothscale.app`, say)."""


def test_the_demo_runs_a_named_app_jar_on_the_streams_protocol(tmp_path: Path) -> None:
    app = streams_protocol_app()
    jars = [arg for jar in app.jars for arg in ("--app-jar", str(jar))]
    settings = [arg for name, value in SETTINGS.items() for arg in ("--app-env", f"{name}={value}")]
    assert app.main_class is not None
    args = ["--kafka", "--group-protocol", "streams", *jars, "--app-main", app.main_class]
    own = ["--app-name", "shop", *settings, "--input", "orders:6:20"]
    stdout, steps = run_kafka_demo(*args, *own, "--output-dir", str(tmp_path))
    assert "each with smoothscale's streams assignor" in stdout
    for name in ("scale-out", "scale-in"):
        assert steps[name]["handover_max_s"] >= steps[name]["handover_p50_s"] > 0, steps[name]
    logs = "".join(log.read_text(errors="replace") for log in (tmp_path / "kafka-logs").rglob("server.log"))
    assert "smoothscale assignor: app shop follows plan generation" in logs
    state_dirs = list((tmp_path / "sandbox").rglob("streams"))
    assert len(state_dirs) >= 6 and all((found / "shop").is_dir() for found in state_dirs), state_dirs
    assert not [path for path in tmp_path.rglob("*") if "$(" in str(path)], "a reference left literal"
    assert processes_using(tmp_path) == []
