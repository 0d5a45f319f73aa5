"""Pipeline benchmark: `analyze` over about 1 GB of mixed Kafka / Kafka Streams logs and operator journal
on `local[2]` (target: 1 GB in under 2 minutes on the project's 2-core machines).

The input is generated in a temporary folder (removed afterwards): 8 node logs (one gzipped) made of an
hour of Streams processing lines with the rebalancing guide's incidents among them (smoothscale.pipeline.
synthetic), repeated day after day until the size is reached, and a journal of scale-outs of several apps
written by the operator's own Journal. Prints progress; the last line is one JSON object, units in keys.

    python benchmarks/pipeline_bench.py               # about 1 GB
    python benchmarks/pipeline_bench.py --mb 100      # a quick run
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import shutil
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from smoothscale.operator.appref import AppRef
from smoothscale.operator.journal import Journal
from smoothscale.pipeline import synthetic as syn

APP = "bench-app"
NODES = 8
DATE = "@DATE@"  # replaced by each day's date
JOURNAL_SHARE = 0.1


def hour_of_logs(node: int) -> str:
    """One hour of one node's log (time of day only; the date is a placeholder): processing lines every
    40 ms, and a rebalance with its guide lines every 5 minutes."""
    lines = []
    for step in range(90_000):
        second = step * 0.04
        ts = f"[{DATE} {int(second // 3600):02d}:{int(second % 3600 // 60):02d}:{second % 60:06.3f}]".replace(
            ".", ","
        )
        lines.append(f"{ts} {syn.noise(APP, node, 1 + step % 2, step)}")
        if step % 7_500 == 0:
            members = {n: [1, 2] for n in range(NODES) if n != (step // 7_500) % NODES or node == n}
            lines.append(f"{ts} " + "\n".join(syn.participating(APP, (node, 1), members)))
            lines.append(f"{ts} {syn.probing_scheduled(APP, (node, 1), step)}")
            lines.append(f"{ts} {syn.sync_failed(APP, node, 2, step)}")
            lines.append(f"{ts} {syn.poll_timeout(APP, node, 2)}")
    return "\n".join(lines) + "\n"


def write_logs(folder: Path, target_bytes: int) -> tuple[list[Path], int]:
    """The node logs (the first one gzipped) and their size uncompressed."""
    hours = [hour_of_logs(node) for node in range(NODES)]
    paths = [folder / f"node{node}.log" for node in range(NODES)]
    outputs = [path.open("w", encoding="utf-8") for path in paths]
    written, day = 0, datetime(2026, 1, 1)
    while written < target_bytes:
        date = f"{day:%Y-%m-%d}"
        for out, hour in zip(outputs, hours, strict=True):
            out.write(hour.replace(DATE, date))
            written += len(hour)
        day += timedelta(days=1)
    for out in outputs:
        out.close()
    packed = paths[0].with_suffix(".log.gz")
    with paths[0].open("rb") as plain, gzip.open(packed, "wb", compresslevel=1) as gz:
        shutil.copyfileobj(plain, gz)
    paths[0].unlink()
    return [packed, *paths[1:]], written


def write_journal(path: Path, target_bytes: int) -> None:
    clock = [datetime(2026, 1, 1, tzinfo=UTC)]
    journal = Journal(stdout=False, path=path, clock=lambda: clock[0])
    round_ = 0
    while path.stat().st_size < target_bytes:
        app = AppRef("default", f"orders-{round_ % 20}", "uid")

        def record(ts: datetime, kind: str, generation: int, app: AppRef = app, **fields: Any) -> None:
            clock[0] = ts
            journal.record(kind, app, generation, **fields)

        start = datetime(2026, 1, 1, tzinfo=UTC) + timedelta(hours=round_)
        syn.scale_out_journal(syn.ScaleOut(start=start, warmups=12, scrape_seconds=1.0, app=app.name), record)
        round_ += 1
    journal.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mb", type=float, default=1000.0, help="input size in MB (default: 1000)")
    args = parser.parse_args()
    # The executors of local mode live in the driver's JVM: give it room to cache the scan.
    os.environ.setdefault("PYSPARK_SUBMIT_ARGS", "--driver-memory 4g pyspark-shell")
    from smoothscale.pipeline.analyze import AnalyzeInputs, analyze  # noqa: PLC0415 - after the JVM options
    from smoothscale.pipeline.session import build_session  # noqa: PLC0415

    folder = Path(tempfile.mkdtemp(prefix="pipeline-bench-"))
    try:
        started = time.perf_counter()
        target = int(args.mb * 1e6)
        logs, log_bytes = write_logs(folder, int(target * (1 - JOURNAL_SHARE)))
        journal = folder / "journal.jsonl"
        write_journal(journal, int(target * JOURNAL_SHARE))
        raw = log_bytes + journal.stat().st_size
        generated = time.perf_counter() - started
        spark = build_session("local[2]", "smoothscale-pipeline-bench")
        inputs = AnalyzeInputs(journals=[str(journal)], logs=[str(p) for p in logs], out=folder / "out")
        started = time.perf_counter()
        result = analyze(spark, inputs)
        seconds = time.perf_counter() - started
        lines = sum(f["lines"] for f in result.inputs)
        diagnosed = result.tables["diagnoses"].count()
        spark.stop()
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    print(f"generated in {generated:.1f} s; analyzed {lines:,} lines, {diagnosed:,} diagnoses")
    figures = {
        "input_mb": round(raw / 1e6, 1),
        "lines": lines,
        "analyze_s": round(seconds, 1),
        "throughput_mb_per_s": round(raw / 1e6 / seconds, 1),
        "generate_s": round(generated, 1),
        "diagnoses": diagnosed,
    }
    print(json.dumps(figures, sort_keys=True))


if __name__ == "__main__":
    main()
