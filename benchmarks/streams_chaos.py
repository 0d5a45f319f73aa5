"""Chaos on real Kafka Streams (issue 25): three brokers and the Java sample app (the smoothscale-streams
bridge) under the real operator in the sandbox, through a seeded random mix of faults
(`smoothscale.sandbox.streams_chaos`: kills with and without the volume, rolling broker restarts, the
operator killed mid-migration, the API server stopped for a minute, the group leader cut off from the API
server, scaling and swaps), each followed by new orders and a wait until the app has settled again.

Checked: every input record counted exactly once (each order has an amount of its own, so a customer's total
tells a lost order from one counted twice; and every committed total grows: `totals_regressed`), no task
ever active on two pods in Kafka's view of the group, the final assignment balanced and equal to the plan;
rebalances and fallbacks counted per fault kind; the time each kind took to inject and to settle after.

    python benchmarks/streams_chaos.py --faults 100 --seed 1

With `--minutes M` no fault starts after M minutes; the checks then run on the faults done (`faults` in the
JSON, of `faults_drawn`). The last line is one JSON object. Exits 1 when a record was lost or duplicated or a
committed total did not grow, a task ran twice, the app did not settle after a fault (`unsettled`), or the
final assignment is not the plan.
"""

from __future__ import annotations

import argparse
import json
import logging
import random
import signal
import sys
import tempfile
import time
from pathlib import Path

from smoothscale.sandbox.addresses import random_block
from smoothscale.sandbox.harness import Sandbox
from smoothscale.sandbox.kafka.broker import KafkaCluster
from smoothscale.sandbox.kafka_streams import create_sample_topics
from smoothscale.sandbox.streams_chaos import KINDS, PARTITIONS, REPLICATION, ChaosTimes, draw, run_chaos


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--faults", type=int, default=100)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--keep", type=Path, help="run in this directory and keep it (logs)")
    parser.add_argument(
        "--minutes",
        type=float,
        help="start no fault after this many minutes; check and report the faults run by then",
    )
    parser.add_argument(
        "--kinds", default=",".join(KINDS), help="comma-separated fault kinds to draw from (default: all)"
    )
    args = parser.parse_args(argv)
    kinds = args.kinds.split(",")
    if unknown := [kind for kind in kinds if kind not in KINDS]:
        parser.error(f"--kinds: unknown {', '.join(unknown)}; each must be one of {', '.join(KINDS)}")
    rng = random.Random(args.seed)
    # A background run (`nohup ... &` ignores SIGINT) is stopped with SIGTERM: exit through the context
    # managers, which stop the pods' JVMs, the operator and the brokers.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    started = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="streams-chaos-") as scratch:
        root = args.keep or Path(scratch)
        root.mkdir(parents=True, exist_ok=True)
        # The kubelet stand-in's and the clients' complaints while the API server is down go to a file.
        logging.basicConfig(filename=root / "benchmark.log", level=logging.WARNING)
        with KafkaCluster(root / "kafka", root / "kafka-logs", brokers=3) as cluster:
            topics = create_sample_topics(
                cluster.bootstrap_servers, f"chaos{args.seed}", PARTITIONS, REPLICATION
            )
            with Sandbox(
                root / "sandbox",
                kafka_bootstrap=cluster.bootstrap_servers,
                first_address=random_block(),
                api_links=True,
            ) as sandbox:
                result = run_chaos(
                    sandbox,
                    cluster,
                    topics,
                    draw(rng, args.faults, kinds),
                    rng,
                    ChaosTimes(),
                    log=lambda line: print(line, flush=True),
                    deadline=None if args.minutes is None else started + 60 * args.minutes,
                )
    result["seed"] = args.seed
    result["seconds"] = round(time.monotonic() - started, 1)
    print(json.dumps(result, sort_keys=True))
    failed = (
        result["lost_or_duplicated_records"]
        or result["totals_regressed"]
        or result["double_actives"]
        or result["unsettled"]
        or not result["final_equals_plan"]
    )
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
