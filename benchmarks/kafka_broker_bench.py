"""The sandbox's Kafka broker (issue 16): what it costs to install and to start, on this machine.

- install: `smoothscale.sandbox.kafka.jars.install()` into a fresh cache folder with a warm `~/.m2` (what
  `.ci/kafka.sh` costs on a machine that has run Maven before; a machine with an empty `~/.m2` adds the
  download of the same ~45 MB), then again with the cache in place (what every later CI run pays);
- the jars' size on disk;
- start-up: from `KafkaCluster.start()` to every broker serving metadata (storage formatted, JVMs up), for
  one broker and for three (one per zone), and the time `stop()` takes. Repeated `--runs` times; the median.

The last line is one JSON object of figures, units in the keys.

    python benchmarks/kafka_broker_bench.py [--runs 3]
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import time
from pathlib import Path

from smoothscale.sandbox.kafka import jars
from smoothscale.sandbox.kafka.broker import KafkaCluster


def log(message: str) -> None:
    print(message, flush=True)


def timed_install(root: Path) -> float:
    started = time.monotonic()
    jars.install(root)
    return time.monotonic() - started


def start_stop(work: Path, brokers: int) -> tuple[float, float]:
    cluster = KafkaCluster(work, brokers=brokers)
    started = time.monotonic()
    cluster.start()
    ready = time.monotonic() - started
    started = time.monotonic()
    cluster.stop()
    return ready, time.monotonic() - started


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=3)
    runs = parser.parse_args().runs
    figures: dict[str, float] = {}
    with tempfile.TemporaryDirectory(prefix="kafka-bench-") as scratch:
        root = Path(scratch)
        figures["install_fresh_cache_warm_m2_s"] = round(timed_install(root / "cache"), 2)
        figures["install_warm_s"] = round(timed_install(root / "cache"), 3)
        libs = jars.libs_dir(root / "cache")
        figures["jars_mb"] = round(jars.disk_bytes(libs) / 1e6, 1)
        figures["jars_count"] = len(list(libs.glob("*.jar")))
        fresh, warm = figures["install_fresh_cache_warm_m2_s"], figures["install_warm_s"]
        log(f"install: {fresh} s fresh, {warm} s warm; {figures['jars_count']} jars, {figures['jars_mb']} MB")
        for brokers in (1, 3):
            ready, stopped = [], []
            for run in range(runs):
                up, down = start_stop(root / f"b{brokers}-{run}", brokers)
                ready.append(up)
                stopped.append(down)
                log(f"{brokers} broker(s), run {run + 1}: ready in {up:.1f} s, stopped in {down:.1f} s")
            figures[f"ready_{brokers}_broker_median_s"] = round(statistics.median(ready), 2)
            figures[f"ready_{brokers}_broker_max_s"] = round(max(ready), 2)
            figures[f"stop_{brokers}_broker_median_s"] = round(statistics.median(stopped), 2)
    print(json.dumps(figures))


if __name__ == "__main__":
    main()
