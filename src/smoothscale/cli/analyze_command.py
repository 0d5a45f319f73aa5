"""`smoothscale analyze` and `smoothscale sweep`: the pipeline's two Spark jobs (PySpark, `local[*]` unless
`--master` says otherwise). The jobs themselves live in `smoothscale.pipeline.entry`, shared with
`spark-submit`; Spark is imported only when a command runs.
"""

from __future__ import annotations

import sys
from pathlib import Path

import click

EXIT_BAD_INPUT = 2

_master = click.option("--master", help="Spark master URL (default: local[*])")


@click.command("analyze", context_settings={"max_content_width": 120})
@click.option("--journal", "journals", multiple=True, type=click.Path(exists=True, dir_okay=False),
              help="the operator's JSON-lines journal (repeatable, .gz ok)")  # fmt: skip
@click.option("--logs", multiple=True, type=click.Path(exists=True, dir_okay=False),
              help="Kafka broker / consumer / Streams log file (repeatable, .gz ok)")  # fmt: skip
@click.option("--out", "out_dir", required=True, type=click.Path(file_okay=False, path_type=Path))
@_master
@click.option("--zones", type=click.Path(exists=True, dir_okay=False, path_type=Path),
              help="YAML/JSON map of pod -> zone, for restore rates per zone")  # fmt: skip
@click.option("--log-date", default="1970-01-01", show_default=True,
              help="date of log lines that carry only a time of day")  # fmt: skip
def analyze_command(
    journals: tuple[str, ...], logs: tuple[str, ...], out_dir: Path, master: str | None, zones: Path | None,
    log_date: str,
) -> None:  # fmt: skip
    """Rebalance analytics: timeline, diagnoses (with the log lines behind them), restore rates, time to
    balance, cross-zone cost, as Parquet under <out>/tables and <out>/report.html."""
    if not journals and not logs:
        click.echo("smoothscale analyze: give --journal and/or --logs", err=True)
        sys.exit(EXIT_BAD_INPUT)
    from smoothscale.pipeline.entry import run_analyze  # noqa: PLC0415 - Spark only when running

    report = run_analyze(list(journals), list(logs), out_dir, master, zones, log_date)
    click.echo(f"wrote {report}")


@click.command("sweep", context_settings={"max_content_width": 120})
@click.argument("grid_file", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.option("--out", "out_dir", required=True, type=click.Path(file_okay=False, path_type=Path))
@_master
def sweep_command(grid_file: Path, out_dir: Path, master: str | None) -> None:
    """Simulate a grid of scenarios x strategies x parameters x seeds (examples/sweeps/*.yaml) as one Spark
    job; writes <out>/tables/sweep (Parquet) and <out>/sweep.html comparing the strategies."""
    from smoothscale.pipeline.entry import run_sweep  # noqa: PLC0415
    from smoothscale.pipeline.sweep import GridError  # noqa: PLC0415

    try:
        report = run_sweep(grid_file, out_dir, master)
    except GridError as error:
        click.echo(f"smoothscale sweep: {error}", err=True)
        sys.exit(EXIT_BAD_INPUT)
    click.echo(f"wrote {report}")
