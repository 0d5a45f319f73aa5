"""`analyze`: journal and logs in, Parquet tables and report.html out.

The log lines are read once, on the JVM: one pass counts each split's lines (to number them) and keeps
the few lines that contain a screening word; the patterns then run on those lines only. Each
table is written as Parquet and read back before the next step uses it, so every step after the parsing
works on small tables.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from smoothscale.pipeline import balance, diagnoses, generations, journal_reader, log_lines, restore, timeline
from smoothscale.pipeline.numbered_lines import read_lines, scan, splits_and_kept


@dataclass(frozen=True)
class AnalyzeInputs:
    journals: Sequence[str]
    logs: Sequence[str]
    out: Path
    zones: Mapping[str, str] = field(default_factory=dict)
    default_date: str = "1970-01-01"  # for log lines that carry only a time of day
    thresholds: diagnoses.Thresholds = field(default_factory=diagnoses.Thresholds)


@dataclass(frozen=True)
class AnalyzeResult:
    tables: dict[str, DataFrame]
    # Per file: the counts of `log_lines.line_counts` (logs), or lines and malformed (journal).
    inputs: list[dict[str, Any]]


def _log_incidents(spark: SparkSession, inputs: AnalyzeInputs) -> tuple[DataFrame, DataFrame]:
    """The recognised lines and the split table (line counts per split, for `line_counts`)."""
    if inputs.logs:
        lines = scan(spark, inputs.logs)
    else:
        lines = spark.createDataFrame([], "value string, file string, block long, row_id long")
    # One pass over the files counts each split's lines and their shapes and keeps the screened lines;
    # the patterns then run on those few lines only.
    screen = log_lines.screened(F.col("value"))
    split_table, kept = splits_and_kept(log_lines.with_shape(lines), screen, *log_lines.split_tallies())
    classified = log_lines.with_shape(log_lines.with_pattern(kept))
    return log_lines.incidents(classified, inputs.default_date), split_table


def _journal(spark: SparkSession, inputs: AnalyzeInputs) -> DataFrame:
    """Every journal line parsed, malformed ones included (flagged, for the counts)."""
    lines = (
        read_lines(spark, inputs.journals)
        if inputs.journals
        else spark.createDataFrame([], "file string, line long, value string")
    )
    return journal_reader.parse_journal(lines)


def _materialize(spark: SparkSession, frame: DataFrame, out: Path, name: str) -> DataFrame:
    """Write `frame` as the Parquet table `name` and read it back, cached (the tables after parsing are
    small, and the diagnoses read them many times): later steps then plan against a file scan instead of
    re-planning the whole lineage (parsing expressions are large) in every step. No coalescing: it would
    pull the parsing of every input into one task."""
    path = str(out / "tables" / name)
    frame.write.mode("overwrite").parquet(path)
    return spark.read.parquet(path).cache()


def analyze(spark: SparkSession, inputs: AnalyzeInputs) -> AnalyzeResult:
    """Build every table, write them as Parquet under `inputs.out/tables`, and return them (read back)."""
    inputs.out.mkdir(parents=True, exist_ok=True)
    found, split_table = _log_incidents(spark, inputs)
    incidents = _materialize(spark, found, inputs.out, "log_incidents")
    every_record = _materialize(spark, _journal(spark, inputs), inputs.out, "journal")
    journal = every_record.where(~F.col("malformed")).drop("malformed")
    recognised = incidents.where(F.col("kind") != log_lines.UNRECOGNISED)
    table = _materialize(spark, generations.generations(recognised), inputs.out, "generations")
    rebalances = _materialize(
        spark, timeline.rebalance_timeline(recognised, journal, table), inputs.out, "rebalances"
    )
    by_task = _materialize(
        spark,
        restore.restore_by_task(journal, restore.zone_table(spark, inputs.zones)),
        inputs.out,
        "warmups",
    )
    derived = {
        "diagnoses": diagnoses.diagnose(rebalances, incidents, journal, table, inputs.thresholds),
        "restore_by_pod": restore.restore_rollup(by_task, "app", "pod", "zone"),
        "restore_by_zone": restore.restore_rollup(by_task, "app", "zone"),
        "time_to_balance": balance.time_to_balance(journal),
        "cross_zone": restore.cross_zone(journal),
    }
    tables = {
        "log_incidents": incidents,
        "journal": journal,
        "generations": table,
        "rebalances": rebalances,
        "warmups": by_task,
    }
    tables |= {name: _materialize(spark, frame, inputs.out, name) for name, frame in derived.items()}
    log_counts = log_lines.line_counts(split_table, incidents)
    files = [{"kind": "log", **row.asDict()} for row in log_counts.orderBy("file").collect()]
    journal_counts = every_record.groupBy("file").agg(
        F.count(F.lit(1)).alias("lines"), F.sum(F.col("malformed").cast("long")).alias("malformed")
    )
    files += [{"kind": "journal", **row.asDict()} for row in journal_counts.orderBy("file").collect()]
    return AnalyzeResult(tables=tables, inputs=files)
