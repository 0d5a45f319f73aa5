"""`smoothscale demo` as a user runs it: it succeeds, reports, draws a timeline, leaves nothing running."""

from __future__ import annotations

from pathlib import Path

import pytest
from sandbox_e2e_kit import processes_using, run_demo

pytestmark = pytest.mark.slow


def test_the_demo_walks_every_step_and_cleans_up(tmp_path: Path) -> None:
    stdout = run_demo("--output-dir", str(tmp_path), "--speed", "2", timeout=240)
    assert f"timeline: {tmp_path / 'timeline.png'}" in stdout
    assert (tmp_path / "timeline.png").read_bytes().startswith(b"\x89PNG")
    assert processes_using(tmp_path) == []
