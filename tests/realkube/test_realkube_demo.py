"""`smoothscale demo` on a real API server (`--kube-bin`, or SMOOTHSCALE_KUBE_BIN): its own control plane,
the same walk through scale-out, scale-in, a host swap, a pod crash and a zone's outage, every invariant
held, nothing left running (the emulator stays the default: tests/sandbox_e2e runs that one)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from realkube_kit import built_binaries, sibling_kit

pytestmark = pytest.mark.slow

SMOOTHSCALE = str(Path(sys.executable).with_name("smoothscale"))
e2e = sibling_kit("sandbox_e2e", "sandbox_e2e_kit")


def test_the_demo_runs_on_a_real_api_server_and_cleans_up(tmp_path: Path) -> None:
    result = subprocess.run(
        [SMOOTHSCALE, "demo", "--output-dir", str(tmp_path), "--speed", "2"],
        env={**os.environ, "SMOOTHSCALE_KUBE_BIN": str(built_binaries())},
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    assert "API server https://127.0.0.1:" in result.stdout
    for step in e2e.EMBEDDED_DEMO_STEPS:
        assert f"[{step}]" in result.stdout
    assert "all invariants held" in result.stdout
    assert (tmp_path / "control-plane" / "logs" / "kube-apiserver.log").exists()
    assert e2e.processes_using(tmp_path) == []
