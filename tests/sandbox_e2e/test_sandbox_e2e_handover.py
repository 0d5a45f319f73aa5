"""A hand-over does not wait for a scrape: with the operator's default scrape interval (5 s), every task that
moves in a scale-out goes unprocessed between its old and its new owner for well under that (the old owner's
acknowledgment is polled, the new owner starts within one watch event of the generation that assigns it)."""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from sandbox_e2e_kit import PLANNED_MOVE_BOUND, Run

from smoothscale.operator.config import OperatorConfig
from smoothscale.sandbox.addresses import random_block
from smoothscale.sandbox.demo import APP, worker_env
from smoothscale.sandbox.harness import Sandbox
from smoothscale.sandbox.records import handovers, processing_intervals

pytestmark = pytest.mark.slow

SCRAPE_INTERVAL = OperatorConfig().scrape_interval
HANDOVER_BOUND = 2.0
"""Seconds a moved task may go unprocessed between its two owners: well below the scrape interval, with room
for a loaded machine (the benchmark measures about 0.3 s)."""


def test_no_handover_in_a_scale_out_waits_for_a_scrape(tmp_path: Path) -> None:
    assert HANDOVER_BOUND < SCRAPE_INTERVAL / 2
    with Sandbox(
        tmp_path,
        worker_env=worker_env(speed=2.0),
        scrape_interval=SCRAPE_INTERVAL,
        first_address=random_block(),
    ) as sandbox:
        run = Run(sandbox)
        run.start(replicas=3)
        started = time.time()
        out = run.step(
            "scale-out", PLANNED_MOVE_BOUND, lambda: sandbox.patch_app(APP, {"spec": {"replicas": 6}})
        )
        moved = handovers(processing_intervals(sandbox.records()), started, time.time())
        new_pods = {"orders-3", "orders-4", "orders-5"}
        assert new_pods <= {h.target_pod for h in moved}, "every new pod took over tasks"
        slow = [
            f"{h.task} {h.source_pod} -> {h.target_pod}: {h.gap:.2f} s"
            for h in moved
            if h.gap > HANDOVER_BOUND
        ]
        assert slow == [], f"hand-overs slower than {HANDOVER_BOUND} s (scrape interval {SCRAPE_INTERVAL} s)"
        run.finish(out)
