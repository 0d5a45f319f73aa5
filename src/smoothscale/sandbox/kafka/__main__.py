"""`python -m smoothscale.sandbox.kafka install|run`: fill the jar cache, or run brokers until Ctrl-C.

`install` prints the jar folder and its size (CI calls it from `.ci/kafka.sh`); `run` prints the bootstrap
address and the log folder, then waits.
"""

from __future__ import annotations

import argparse
import signal
import sys
import tempfile
import time
from pathlib import Path

from smoothscale.sandbox.kafka import jars
from smoothscale.sandbox.kafka.broker import KafkaCluster


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m smoothscale.sandbox.kafka")
    commands = parser.add_subparsers(dest="command", required=True)
    commands.add_parser("install", help="copy the broker's jars from Maven Central into the user cache")
    run = commands.add_parser("run", help="start brokers on 127.0.0.1 until interrupted")
    run.add_argument("--brokers", type=int, default=1, help="1, or 3 for one broker per zone")
    run.add_argument("--dir", type=Path, default=None, help="data and logs (default: a temporary folder)")
    options = parser.parse_args(argv)

    if options.command == "install":
        started = time.monotonic()
        libs = jars.install()
        megabytes = jars.disk_bytes(libs) / 1e6
        seconds = time.monotonic() - started
        print(f"Kafka {jars.kafka_version()} jars: {libs} ({megabytes:.1f} MB, {seconds:.1f} s)")
        return 0

    work_dir = options.dir or Path(tempfile.mkdtemp(prefix="smoothscale-kafka-"))
    started = time.monotonic()
    with KafkaCluster(work_dir, brokers=options.brokers) as cluster:
        print(f"bootstrap servers: {cluster.bootstrap_servers} (ready in {time.monotonic() - started:.1f} s)")
        print(f"broker logs: {cluster.log_dir}", flush=True)
        signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
        try:
            while True:
                time.sleep(3600)
        except KeyboardInterrupt:
            pass
    return 0


if __name__ == "__main__":
    sys.exit(main())
