"""`smoothscale demo` as a user runs it: it succeeds, reports, draws a timeline, leaves nothing running."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from sandbox_e2e_kit import processes_using

pytestmark = pytest.mark.slow

SMOOTHSCALE = str(Path(sys.executable).with_name("smoothscale"))


def test_the_demo_walks_every_step_and_cleans_up(tmp_path: Path) -> None:
    result = subprocess.run(
        [SMOOTHSCALE, "demo", "--output-dir", str(tmp_path), "--speed", "2"],
        capture_output=True,
        text=True,
        timeout=240,
        check=False,
    )
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    for step in ("create", "scale-out", "scale-in", "host-swap", "pod-crash"):
        assert f"[{step}]" in result.stdout
    assert "all invariants held" in result.stdout
    assert f"timeline: {tmp_path / 'timeline.png'}" in result.stdout
    assert (tmp_path / "timeline.png").read_bytes().startswith(b"\x89PNG")
    assert processes_using(tmp_path) == []
