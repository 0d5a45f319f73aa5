"""Chaos end-to-end (issue 9), in CI: 40 seeded random events over the sandbox (pod kills, operator kills,
API 409/500/hangs, frozen workers, a zone lost and restored, scaling, drains, template changes), with the
invariants of `smoothscale.sandbox.chaos` judged after every event and at the end; then the same with a lease
(issue 40), where frozen, cut-off and lost pods fence themselves and their actives fail over.
`benchmarks/chaos_run.py` runs 200 and more."""

from __future__ import annotations

from pathlib import Path

import pytest

from smoothscale.sandbox.addresses import random_block
from smoothscale.sandbox.chaos import KINDS, ChaosRun, ChaosSettings
from smoothscale.sandbox.demo import worker_env
from smoothscale.sandbox.harness import Sandbox

pytestmark = pytest.mark.slow

EVENTS = 40
LEASE_SECONDS = 3.0


@pytest.mark.parametrize(
    ("seed", "lease_seconds"), [(9, None), (3, LEASE_SECONDS)], ids=["no-lease", "lease"]
)
def test_seeded_chaos_violates_no_invariant(tmp_path: Path, seed: int, lease_seconds: float | None) -> None:
    settings = ChaosSettings(events=EVENTS, seed=seed, lease_seconds=lease_seconds)
    with Sandbox(
        tmp_path, worker_env=worker_env(speed=4.0), scrape_interval=0.5, first_address=random_block()
    ) as sandbox:
        report = ChaosRun(sandbox, settings, log=lambda _: None).run()
    assert report.events == EVENTS
    assert set(report.faults) <= set(KINDS)
    assert report.violations == [], report.text()
