"""The pipeline's jobs as a plain program, so that the same code runs from the `smoothscale` CLI, from
`python -m smoothscale.pipeline`, and under `spark-submit` (which runs a script, not a click command):

    spark-submit --master spark://h:7077 pipeline/__main__.py analyze --journal j.jsonl --logs a.log --out o
    spark-submit pipeline/__main__.py sweep examples/sweeps/warmups-and-bandwidth.yaml --out sweep-out

Under `spark-submit` the master comes from the submit command unless `--master` is given here too.
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from pathlib import Path

import yaml

from smoothscale.pipeline.session import build_session


def run_analyze(
    journals: Sequence[str],
    logs: Sequence[str],
    out: Path,
    master: str | None = None,
    zones_file: Path | None = None,
    log_date: str = "1970-01-01",
) -> Path:
    """Analyze the journal(s) and logs into `out` (tables/, PNGs, report.html); returns the report's path."""
    from smoothscale.pipeline.analyze import AnalyzeInputs, analyze  # noqa: PLC0415 - Spark loads here
    from smoothscale.pipeline.report import write_report  # noqa: PLC0415

    zones = (
        {str(k): str(v) for k, v in (yaml.safe_load(zones_file.read_text()) or {}).items()}
        if zones_file
        else {}
    )
    spark = build_session(master, "smoothscale-analyze")
    inputs = AnalyzeInputs(journals=journals, logs=logs, out=out, zones=zones, default_date=log_date)
    return write_report(analyze(spark, inputs), out)


def run_sweep(grid_file: Path, out: Path, master: str | None = None) -> Path:
    """Simulate the grid into `out` (tables/sweep, PNGs, sweep.html); returns the report's path."""
    from smoothscale.pipeline.sweep import load_grid, sweep  # noqa: PLC0415

    grid = load_grid(grid_file)
    spark = build_session(master, "smoothscale-sweep")
    return sweep(spark, grid, out)[1]


def parser() -> argparse.ArgumentParser:
    root = argparse.ArgumentParser(prog="smoothscale.pipeline", description=__doc__.split("\n\n")[0])
    jobs = root.add_subparsers(dest="job", required=True)
    analyze = jobs.add_parser("analyze", help="journal and logs -> Parquet tables and report.html")
    analyze.add_argument(
        "--journal", nargs="+", action="extend", default=[], help="operator journals (JSON lines, .gz ok)"
    )
    analyze.add_argument(
        "--logs", nargs="+", action="extend", default=[], help="Kafka / Kafka Streams log files (.gz ok)"
    )
    analyze.add_argument("--out", type=Path, required=True)
    analyze.add_argument("--master", help="Spark master (default: local[*], or spark-submit's)")
    analyze.add_argument("--zones", type=Path, help="YAML or JSON map of pod -> zone")
    analyze.add_argument("--log-date", default="1970-01-01", help="date of lines stamped with a time only")
    sweep = jobs.add_parser("sweep", help="the simulator over a grid -> Parquet and sweep.html")
    sweep.add_argument("grid", type=Path)
    sweep.add_argument("--out", type=Path, required=True)
    sweep.add_argument("--master", help="Spark master (default: local[*], or spark-submit's)")
    return root


def main(argv: Sequence[str] | None = None) -> None:
    args = parser().parse_args(argv)
    if args.job == "analyze":
        report = run_analyze(args.journal, args.logs, args.out, args.master, args.zones, args.log_date)
    else:
        report = run_sweep(args.grid, args.out, args.master)
    print(f"wrote {report}")
