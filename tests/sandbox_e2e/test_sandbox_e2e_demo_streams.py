"""`smoothscale demo --kafka --group-protocol streams` as a user runs it: three 4.4.0 brokers, one per zone,
each with smoothscale's streams assignor (KIP-1357) on its class path; the sample app on
`group.protocol=streams` (Kafka Streams 4.4.0) as every pod's process, through every step of the demo. No pod
serves metrics: the demo reads what each pod runs from Kafka's own view of the group. Every step must settle
balanced with Kafka's view the plan, the scale steps must move tasks (the hand-overs measured), and at the
end every order must be counted once and Kafka's view (assignor, actives and copies) the plan; the demo exits
0 only then."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
from sandbox_e2e_kit import DEMO_STEPS, SMOOTHSCALE, processes_using

pytestmark = [pytest.mark.slow, pytest.mark.timeout(1500)]


def test_the_demo_walks_a_streams_protocol_app_through_the_brokers_plugin(tmp_path: Path) -> None:
    args = ["--kafka", "--group-protocol", "streams", "--json", "--output-dir", str(tmp_path)]
    result = subprocess.run(
        [SMOOTHSCALE, "demo", *args], capture_output=True, text=True, timeout=1400, check=False
    )
    stdout = result.stdout
    assert result.returncode in (0, 1), stdout[-4000:] + result.stderr[-3000:]
    figures = json.loads(stdout.strip().splitlines()[-1])
    steps = figures["steps"]
    assert tuple(steps) == DEMO_STEPS, stdout[-4000:]
    for name, step in steps.items():
        assert step["settled_s"] is not None, (name, step)
        assert (step["plan_matches_kafka"], step["balanced"]) == (True, True), (name, step)
    assert (result.returncode, figures["exit_status"]) == (0, 0), stdout[-3000:]
    for name in ("scale-out", "scale-in"):
        assert steps[name]["moved"] >= 4, steps[name]
    assert "each with smoothscale's streams assignor" in stdout
    assert "all invariants held" in stdout
    logs = "".join(log.read_text(errors="replace") for log in (tmp_path / "kafka-logs").rglob("server.log"))
    assert "smoothscale assignor: app orders follows plan generation" in logs
    assert processes_using(tmp_path) == []
