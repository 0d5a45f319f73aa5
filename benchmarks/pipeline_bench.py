"""Pipeline benchmark: `analyze` over about 1 GB of mixed Kafka / Kafka Streams logs and operator journal
on `local[2]` (target: 1 GB in under 2 minutes on the project's 2-core machines).

The input is generated in a temporary folder (removed afterwards): 8 node logs (one gzipped) made of an
hour of Streams processing lines with the rebalancing guide's incidents among them (smoothscale.pipeline.
synthetic), repeated day after day until the size is reached, and a journal of scale-outs of several apps
written by the operator's own Journal. Prints progress; the last line is one JSON object, units in keys.

    python benchmarks/pipeline_bench.py               # about 1 GB
    python benchmarks/pipeline_bench.py --mb 100      # a quick run
    python benchmarks/pipeline_bench.py --mb 200 --baseline 8eb38fe^   # same-run A/B against that commit

With `--baseline <git-ref>` the input is generated once (by the current code), then analysed by the
reference commit's pipeline (its `pipeline/` extracted under `.cache/pipeline-baseline/<sha>/` and put first
on a worker's PYTHONPATH) and by the current one, each in its own worker process and Spark session, in
alternating order round after round (`--rounds`); the last line gives each side's median seconds and MB/s
and the after/before throughput ratio (above 1: faster now). `--baseline HEAD` shows the noise.
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import shutil
import statistics
import sys
import tempfile
import time
from dataclasses import asdict, dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from baseline_tree import SideWorker, baseline_tree

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


@dataclass(frozen=True)
class AnalyzeFiles:
    logs: list[str]
    journal: str


def generate(folder: Path, mb: float) -> tuple[AnalyzeFiles, int]:
    """The node logs and the journal, about `mb` MB in all, written into `folder`; and their raw size."""
    target = int(mb * 1e6)
    logs, log_bytes = write_logs(folder, int(target * (1 - JOURNAL_SHARE)))
    journal = folder / "journal.jsonl"
    write_journal(journal, int(target * JOURNAL_SHARE))
    return AnalyzeFiles(logs=[str(p) for p in logs], journal=str(journal)), log_bytes + journal.stat().st_size


def serve_runs(folder: str) -> None:
    """Worker: one Spark session; per line read (a run's name), `analyze` the generated input in `folder`
    once and answer with its wall seconds, the lines analysed and the diagnoses found (one JSON line)."""
    # The executors of local mode live in the driver's JVM: give it room to cache the scan.
    os.environ.setdefault("PYSPARK_SUBMIT_ARGS", "--driver-memory 4g pyspark-shell")
    from smoothscale.pipeline import analyze as analyze_module  # noqa: PLC0415 - after the JVM options
    from smoothscale.pipeline.session import build_session  # noqa: PLC0415

    files = AnalyzeFiles(**json.loads((Path(folder) / "files.json").read_text()))
    spark = build_session("local[2]", "smoothscale-pipeline-bench")
    try:
        print(json.dumps({"analyze": analyze_module.__file__}), flush=True)
        for line in sys.stdin:
            out = Path(folder) / f"out-{line.strip()}"
            inputs = analyze_module.AnalyzeInputs(journals=[files.journal], logs=files.logs, out=out)
            started = time.perf_counter()
            result = analyze_module.analyze(spark, inputs)
            seconds = time.perf_counter() - started
            run = {
                "seconds": seconds,
                "lines": sum(f["lines"] for f in result.inputs),
                "diagnoses": result.tables["diagnoses"].count(),
            }
            spark.catalog.clearCache()
            shutil.rmtree(out, ignore_errors=True)
            print(json.dumps(run), flush=True)
    finally:
        spark.stop()


def compare(ref: str, mb: float, rounds: int) -> dict[str, Any]:
    """The same generated input analysed by the pipeline at `ref` (before) and the checkout's (after), each
    in its own worker and Spark session, `rounds` times each in alternating order (before first, then after
    first), so that machine load hits both sides alike; median wall seconds, MB/s and their ratio."""
    sha, baseline = baseline_tree(ref, "pipeline", "analyze.py")
    folder = Path(tempfile.mkdtemp(prefix="pipeline-bench-"))
    try:
        started = time.perf_counter()
        files, raw = generate(folder, mb)
        (folder / "files.json").write_text(json.dumps(asdict(files)))
        print(f"generated {raw / 1e6:.1f} MB in {time.perf_counter() - started:.1f} s", flush=True)
        runs: dict[str, list[dict[str, float]]] = {"before": [], "after": []}
        before = SideWorker("before", __file__, str(folder), baseline, "pipeline", "analyze")
        try:
            after = SideWorker("after", __file__, str(folder), None, "pipeline", "analyze")
            try:
                for turn in range(rounds):
                    pair = [("before", before), ("after", after)]
                    for side, worker in pair if turn % 2 == 0 else pair[::-1]:
                        run = json.loads(worker.ask(f"{worker.name}-{turn}"))
                        runs[side].append(run)
                        print(f"round {turn + 1}: {side} {run['seconds']:.1f} s", flush=True)
            finally:
                after.close()
        finally:
            before.close()
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    figures: dict[str, Any] = {"baseline_commit": sha, "rounds": rounds, "input_mb": round(raw / 1e6, 1)}
    throughput = {}
    for side, side_runs in runs.items():
        seconds = statistics.median(run["seconds"] for run in side_runs)
        throughput[side] = raw / 1e6 / seconds
        figures[f"{side}_analyze_s"] = round(seconds, 1)
        figures[f"{side}_analyze_s_each"] = [round(run["seconds"], 1) for run in side_runs]
        figures[f"{side}_throughput_mb_per_s"] = round(throughput[side], 2)
        figures[f"{side}_lines"] = side_runs[0]["lines"]
        figures[f"{side}_diagnoses"] = side_runs[0]["diagnoses"]
    figures["after_over_before_throughput_ratio"] = round(throughput["after"] / throughput["before"], 3)
    return figures


def measure(mb: float) -> dict[str, Any]:
    """The default run: generate, then `analyze` once in this process."""
    # The executors of local mode live in the driver's JVM: give it room to cache the scan.
    os.environ.setdefault("PYSPARK_SUBMIT_ARGS", "--driver-memory 4g pyspark-shell")
    from smoothscale.pipeline.analyze import AnalyzeInputs, analyze  # noqa: PLC0415 - after the JVM options
    from smoothscale.pipeline.session import build_session  # noqa: PLC0415

    folder = Path(tempfile.mkdtemp(prefix="pipeline-bench-"))
    try:
        started = time.perf_counter()
        files, raw = generate(folder, mb)
        generated = time.perf_counter() - started
        spark = build_session("local[2]", "smoothscale-pipeline-bench")
        inputs = AnalyzeInputs(journals=[files.journal], logs=files.logs, out=folder / "out")
        started = time.perf_counter()
        result = analyze(spark, inputs)
        seconds = time.perf_counter() - started
        lines = sum(f["lines"] for f in result.inputs)
        diagnosed = result.tables["diagnoses"].count()
        spark.stop()
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    print(f"generated in {generated:.1f} s; analyzed {lines:,} lines, {diagnosed:,} diagnoses")
    return {
        "input_mb": round(raw / 1e6, 1),
        "lines": lines,
        "analyze_s": round(seconds, 1),
        "throughput_mb_per_s": round(raw / 1e6 / seconds, 1),
        "generate_s": round(generated, 1),
        "diagnoses": diagnosed,
    }


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--mb", type=float, default=1000.0, help="input size in MB (default: 1000)")
    parser.add_argument(
        "--baseline", metavar="GIT_REF", help="compare against the pipeline at this commit (same-run A/B)"
    )
    parser.add_argument("--rounds", type=int, default=3, help="A/B rounds with --baseline (default 3)")
    parser.add_argument("--worker", metavar="FOLDER", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.mb <= 0:
        parser.error("--mb: expected a positive size")
    if args.worker:
        serve_runs(args.worker)
    elif args.baseline:
        if args.rounds < 1:
            parser.error("--rounds: expected at least 1")
        print(json.dumps(compare(args.baseline, args.mb, args.rounds), sort_keys=True))
    else:
        print(json.dumps(measure(args.mb), sort_keys=True))


if __name__ == "__main__":
    main()
