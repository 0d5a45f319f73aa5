"""`sweep`: the simulator over a grid of scenarios x strategies x parameter values x seeds, as ONE Spark job
with one simulation per task, and a comparison report.

The grid file (YAML):

    scenarios: [../scenarios/scale-out-3-to-6.yaml]   # paths relative to the grid file
    strategies: [kip441, smoothscale]                  # default: all of them
    seeds: [0, 1]
    parameters:                                        # dotted paths into the scenario: their product
      planner.maxWarmupReplicas: [1, 2, 4]
      pods.restoreRecordsPerSecondPerCopy: [25000, 50000]

A grid point travels to its task as JSON (scenario data with the parameters applied); a point whose
scenario is invalid or violates an invariant becomes a row with `error` set, so one bad point never loses
the others' results.
"""

from __future__ import annotations

import copy
import html
import itertools
import json
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from smoothscale.pipeline.html_table import table
from smoothscale.simulation import (
    STRATEGY_NAMES,
    InvariantViolation,
    ScenarioError,
    parse_scenario,
    simulate,
)

FIGURES = (
    ("time_to_balance_s", "double"),
    ("lower_bound_s", "double"),
    ("ratio_to_lower_bound", "double"),
    ("downtime_task_s", "double"),
    ("restore_downtime_task_s", "double"),
    ("records_restored", "double"),
    ("cross_zone_records", "double"),
    ("generations", "long"),
    ("plans", "long"),
    ("peak_task_skew", "double"),
    ("balanced", "boolean"),
    ("wall_s", "double"),
    ("error", "string"),
)


class GridError(ValueError):
    """The grid file is unusable (the message says why)."""


@dataclass(frozen=True)
class Grid:
    scenarios: dict[str, dict[str, Any]]  # name -> scenario data
    strategies: list[str]
    seeds: list[int]
    parameters: dict[str, list[Any]]

    def points(self) -> list[dict[str, Any]]:
        names = list(self.parameters)
        combos = list(itertools.product(*self.parameters.values())) or [()]
        return [
            {
                "scenario": scenario,
                "strategy": strategy,
                "seed": seed,
                "parameters": dict(zip(names, values, strict=True)),
            }
            for scenario in self.scenarios
            for strategy in self.strategies
            for values in combos
            for seed in self.seeds
        ]


def load_grid(path: Path) -> Grid:
    try:
        data = yaml.safe_load(path.read_text())
        scenarios = {}
        for entry in data["scenarios"]:
            scenario = yaml.safe_load((path.parent / entry).read_text())
            scenarios[str(scenario.get("name", Path(entry).stem))] = scenario
    except (OSError, yaml.YAMLError, KeyError, TypeError) as error:
        raise GridError(f"{path}: {error}") from None
    strategies = list(data.get("strategies") or STRATEGY_NAMES)
    unknown = sorted(set(strategies) - set(STRATEGY_NAMES))
    if unknown:
        raise GridError(f"{path}: unknown strategies {unknown}; known: {list(STRATEGY_NAMES)}")
    parameters = {str(k): list(v) for k, v in (data.get("parameters") or {}).items()}
    return Grid(scenarios, strategies, [int(s) for s in data.get("seeds") or [0]], parameters)


def with_parameters(scenario: Mapping[str, Any], parameters: Mapping[str, Any]) -> dict[str, Any]:
    """A copy of the scenario data with each dotted path set to its value."""
    result = copy.deepcopy(dict(scenario))
    for dotted, value in parameters.items():
        *parents, leaf = dotted.split(".")
        node = result
        for key in parents:
            node = node.setdefault(key, {})
        node[leaf] = value
    return result


def run_point(point_json: str) -> tuple[Any, ...]:
    """One simulation (runs in a Spark task): the point's keys, then FIGURES in order."""
    point = json.loads(point_json)
    keys = (point["scenario"], point["strategy"], point["seed"], *point["parameters"].values())
    started = time.perf_counter()
    try:
        r = simulate(parse_scenario(point["data"]), point["strategy"], point["seed"])
    except (ScenarioError, InvariantViolation) as error:
        return (*keys, *[None] * (len(FIGURES) - 2), time.perf_counter() - started, str(error))
    figures = (
        r.time_to_balance_seconds, r.lower_bound_seconds, r.ratio_to_lower_bound, r.downtime_task_seconds,
        r.restore_downtime_task_seconds, r.records_restored, r.cross_zone_records, r.generations_published,
        r.plans, r.peak_task_skew, r.balanced, time.perf_counter() - started, None,
    )  # fmt: skip
    return (*keys, *figures)


def column_name(parameter: str) -> str:
    """`planner.maxWarmupReplicas` -> `planner_maxWarmupReplicas` (a Parquet-friendly column name)."""
    return parameter.replace(".", "_")


def run_grid(spark: SparkSession, grid: Grid) -> DataFrame:
    points = [
        json.dumps({**p, "data": with_parameters(grid.scenarios[p["scenario"]], p["parameters"])})
        for p in grid.points()
    ]
    parameter_types = {
        name: "double" if any(isinstance(v, float) for v in values) else "long"
        for name, values in grid.parameters.items()
    }
    schema = ", ".join(
        ["scenario string", "strategy string", "seed long"]
        + [f"{column_name(n)} {t}" for n, t in parameter_types.items()]
        + [f"{n} {t}" for n, t in FIGURES]
    )
    doubles = [t == "double" for t in parameter_types.values()]
    rows = spark.sparkContext.parallelize(points, len(points)).map(run_point)
    return spark.createDataFrame(rows.map(lambda row: _typed(row, doubles)), schema)


def _typed(row: tuple[Any, ...], doubles: Sequence[bool]) -> tuple[Any, ...]:
    """Parameters as the schema wants them: YAML reads 2 and 2.5 as int and float, Spark does not coerce."""
    end = 3 + len(doubles)
    values = [float(v) if double else v for v, double in zip(row[3:end], doubles, strict=True)]
    return (*row[:3], *values, *row[end:])


def comparison(results: DataFrame, parameters: Sequence[str]) -> dict[str, list[dict[str, Any]]]:
    """Per parameter: mean time to balance and downtime per (scenario, strategy, value), over the seeds and
    the other parameters' values."""
    tables = {}
    for name in parameters or ["seed"]:
        column = column_name(name)
        frame = (
            results.groupBy("scenario", "strategy", F.col(column).alias("value"))
            .agg(
                F.avg("time_to_balance_s").alias("time_to_balance_s"),
                F.avg("downtime_task_s").alias("downtime_task_s"),
                F.avg("ratio_to_lower_bound").alias("ratio_to_lower_bound"),
                F.count(F.lit(1)).alias("runs"),
                F.sum(F.col("error").isNotNull().cast("int")).alias("errors"),
            )
            .orderBy("scenario", "strategy", "value")
        )
        tables[name] = [row.asDict() for row in frame.collect()]
    return tables


def write_sweep_report(tables: Mapping[str, list[dict[str, Any]]], points: int, out: Path) -> Path:
    import matplotlib  # noqa: PLC0415 - only when drawing

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt  # noqa: PLC0415

    sections = []
    for index, (name, rows) in enumerate(tables.items()):
        fig, ax = plt.subplots(figsize=(8, 4))
        for scenario, strategy in sorted({(r["scenario"], r["strategy"]) for r in rows}):
            line = [
                (r["value"], r["time_to_balance_s"])
                for r in rows
                if (r["scenario"], r["strategy"]) == (scenario, strategy)
            ]
            ax.plot(*zip(*line, strict=True), marker="o", label=f"{scenario} / {strategy}")
        ax.set_xlabel(name)
        ax.set_ylabel("mean time to balance (s)")
        ax.legend(fontsize="small")
        fig.tight_layout()
        png = f"sweep_{index}.png"
        fig.savefig(out / png, dpi=90)
        plt.close(fig)
        sections.append(
            f"<h2>time to balance against {html.escape(name)}</h2><img src='{png}' alt='{html.escape(name)}'>"
            + table(rows)
        )
    page = (
        "<!doctype html><html><head><meta charset='utf-8'><title>smoothscale sweep</title><style>"
        "body{font-family:sans-serif;margin:2em}table{border-collapse:collapse;font-size:small}"
        "td,th{border:1px solid #ccc;padding:2px 6px}</style></head><body>"
        f"<h1>Simulation sweep</h1><p>{points} simulations, one Spark task each; every figure is a mean over"
        " seeds and the other parameters. Results: <code>tables/sweep</code> (Parquet).</p>"
        + "".join(sections)
        + "</body></html>"
    )
    path = out / "sweep.html"
    path.write_text(page, encoding="utf-8")
    return path


def sweep(spark: SparkSession, grid: Grid, out: Path) -> tuple[DataFrame, Path]:
    """Run the grid, write `tables/sweep` (Parquet) and sweep.html under `out`."""
    out.mkdir(parents=True, exist_ok=True)
    path = str(out / "tables" / "sweep")
    run_grid(spark, grid).write.mode("overwrite").parquet(path)
    results = spark.read.parquet(path)
    report = write_sweep_report(comparison(results, list(grid.parameters)), len(grid.points()), out)
    return results, report
