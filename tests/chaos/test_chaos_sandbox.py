"""Chaos end-to-end (issue 9), in CI: 40 seeded random events over the sandbox (pod kills, operator kills,
API 409/500/hangs, frozen workers, a zone lost and restored, scaling, drains, template changes), with the
invariants of `smoothscale.sandbox.chaos` judged after every event and at the end. `benchmarks/chaos_run.py`
runs 200 and more."""

from __future__ import annotations

from pathlib import Path

import pytest

from smoothscale.sandbox.addresses import random_block
from smoothscale.sandbox.chaos import KINDS, ChaosRun, ChaosSettings
from smoothscale.sandbox.demo import worker_env
from smoothscale.sandbox.harness import Sandbox

pytestmark = pytest.mark.slow

EVENTS = 40


def test_seeded_chaos_violates_no_invariant(tmp_path: Path) -> None:
    with Sandbox(
        tmp_path, worker_env=worker_env(speed=4.0), scrape_interval=0.5, first_address=random_block()
    ) as sandbox:
        report = ChaosRun(sandbox, ChaosSettings(events=EVENTS, seed=9), log=lambda _: None).run()
    assert report.events == EVENTS
    assert set(report.faults) <= set(KINDS)
    assert report.violations == [], report.text()
