"""`smoothscale simulate`: run one scenario under each strategy, compare them, draw a timeline per strategy.

The scenario file is YAML (JSON is YAML too). Parsing it is this command's job, so that the simulator stays
free of file formats; a bad file exits with status 2 and one line per problem, each naming the field, as
`smoothscale plan` does. matplotlib is imported only once there is something to draw.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path

import click
import yaml

from smoothscale.simulation import (
    STRATEGY_NAMES,
    InvariantViolation,
    Scenario,
    ScenarioError,
    SimulationResult,
    parse_scenario,
    simulate,
)

EXIT_BAD_INPUT = 2
EXIT_INVARIANT = 1


def load_scenario(path: Path) -> Scenario:
    """The scenario in a YAML file; raises `ScenarioError` for unreadable, non-YAML or invalid files."""
    try:
        data = yaml.safe_load(path.read_text())
    except OSError as error:
        raise ScenarioError([f"{path}: cannot read: {error.strerror}"]) from None
    except yaml.YAMLError as error:
        mark = getattr(error, "problem_mark", None)
        where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark is not None else ""
        raise ScenarioError([f"{path}: not valid YAML{where}"]) from None
    return parse_scenario(data)


def _number(value: float | None, digits: int = 1) -> str:
    return "-" if value is None else f"{value:,.{digits}f}"


def _records(value: float) -> str:
    return f"{value / 1e6:,.1f} M"


_Row = tuple[str, Callable[[SimulationResult], str]]
ROWS: list[_Row] = [
    ("downtime (task-s)", lambda r: _number(r.downtime_task_seconds)),
    ("  restoring (task-s)", lambda r: _number(r.restore_downtime_task_seconds)),
    ("  between owners (task-s)", lambda r: _number(r.handover_downtime_task_seconds)),
    ("  owner down (task-s)", lambda r: _number(r.failover_downtime_task_seconds)),
    ("time to balance (s)", lambda r: _number(r.time_to_balance_seconds)),
    ("lower bound (s)", lambda r: _number(r.lower_bound_seconds)),
    ("ratio to lower bound", lambda r: _number(r.ratio_to_lower_bound, 2)),
    ("records restored", lambda r: _records(r.records_restored)),
    ("cross-zone records", lambda r: _records(r.cross_zone_records)),
    ("generations published", lambda r: str(r.generations_published)),
    ("plans", lambda r: str(r.plans)),
    ("peak task skew", lambda r: _number(r.peak_task_skew, 0)),
    ("peak pod load (weight)", lambda r: _number(r.peak_pod_load)),
    ("actives moved", lambda r: str(r.moved_actives)),
    ("balanced at the end", lambda r: "yes" if r.balanced else "NO"),
]


def comparison_table(results: list[SimulationResult]) -> str:
    """One row per figure, one column per strategy."""
    title = f"{results[0].scenario} (seed {results[0].seed})"
    cells = [[title, *(r.strategy for r in results)]]
    cells += [[label, *(value(r) for r in results)] for label, value in ROWS]
    widths = [max(len(row[i]) for row in cells) for i in range(len(cells[0]))]
    lines = [
        "  ".join([row[0].ljust(widths[0]), *(c.rjust(w) for c, w in zip(row[1:], widths[1:], strict=True))])
        for row in cells
    ]
    return "\n".join(lines)


@click.command("simulate", context_settings={"max_content_width": 120})
@click.argument("scenario_file", type=click.Path(dir_okay=False, path_type=Path))
@click.option(
    "--strategy",
    type=click.Choice([*STRATEGY_NAMES, "all"]),
    default="all",
    show_default=True,
    help="strategy to run, or all of them on the same scenario and seed",
)
@click.option("--seed", type=int, default=0, show_default=True, help="seed of the scenario's random choices")
@click.option(
    "--out",
    "out_dir",
    type=click.Path(file_okay=False, path_type=Path),
    default=Path("out"),
    show_default=True,
    help="folder for the PNG timelines, one per strategy",
)
def simulate_command(scenario_file: Path, strategy: str, seed: int, out_dir: Path) -> None:
    """Simulate a scaling scenario (examples/scenarios/*.yaml) and compare eager, kip441 and smoothscale.

    Prints downtime, time to balance against its physical lower bound, restore and cross-zone traffic,
    generations and skew per strategy, and writes <out>/<scenario>-<strategy>.png: active and warmup tasks
    per pod and the total lag over time.
    """
    try:
        scenario = load_scenario(scenario_file)
        names = list(STRATEGY_NAMES) if strategy == "all" else [strategy]
        results = [simulate(scenario, name, seed) for name in names]
    except ScenarioError as error:
        click.echo("smoothscale simulate: invalid scenario", err=True)
        for problem in error.problems:
            click.echo(f"  {problem}", err=True)
        sys.exit(EXIT_BAD_INPUT)
    except InvariantViolation as error:
        click.echo(f"smoothscale simulate: invariant violated: {error}", err=True)
        sys.exit(EXIT_INVARIANT)
    click.echo(comparison_table(results))
    from smoothscale.cli.timeline_plot import plot_timeline  # noqa: PLC0415 - matplotlib only when drawing

    out_dir.mkdir(parents=True, exist_ok=True)
    for result in results:
        path = out_dir / f"{scenario_file.stem}-{result.strategy}.png"
        plot_timeline(result, path)
        click.echo(f"wrote {path}")
