"""Chaos runner (issue 9): a seeded random sequence of faults and changes over the sandbox (real operator,
real worker processes, the emulated API server), judged after every event and at the end
(`smoothscale.sandbox.chaos`). Prints a summary; the last line is one JSON object: events, faults by kind,
violations (the count; each is printed above it), the longest gap after the faults stopped, seconds.

    python benchmarks/chaos_run.py                      # 200 events, seed 1 (about 5 minutes)
    python benchmarks/chaos_run.py --events 400 --seed 7
    python benchmarks/chaos_run.py --events 120 --lease-seconds 3   # pods fenced by a lease, cut off too

Exits 1 when any invariant was violated.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

from smoothscale.sandbox.addresses import random_block
from smoothscale.sandbox.chaos import ChaosRun, ChaosSettings
from smoothscale.sandbox.demo import worker_env
from smoothscale.sandbox.harness import Sandbox

SPEED = 4.0
"""Workers restore 16,000 records a second: a warmup catches up in about 2 s, so migrations finish between
events often enough for faults to hit every phase of them."""
SCRAPE_INTERVAL = 0.5


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=200)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--pause", type=float, default=ChaosSettings.pause, help="seconds between events")
    parser.add_argument(
        "--lease-seconds", type=float, default=None, help="the app's spec.failover.leaseSeconds"
    )
    parser.add_argument("--keep", type=Path, help="run in this directory and keep it (records, logs)")
    args = parser.parse_args(argv)
    settings = ChaosSettings(
        events=args.events, seed=args.seed, pause=args.pause, lease_seconds=args.lease_seconds
    )
    with tempfile.TemporaryDirectory(prefix="chaos-") as scratch:
        root = args.keep or Path(scratch)
        with Sandbox(
            root,
            worker_env=worker_env(speed=SPEED),
            scrape_interval=SCRAPE_INTERVAL,
            first_address=random_block(),
        ) as sandbox:
            report = ChaosRun(sandbox, settings, log=lambda line: print(line, flush=True)).run()
    print(report.text())
    return 1 if report.violations else 0


if __name__ == "__main__":
    sys.exit(main())
