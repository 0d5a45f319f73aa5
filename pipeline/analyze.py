"""`analyze`: journal and logs in, Parquet tables and report.html out.

The log lines are scanned once: each is classified on the JVM (a `contains` per pattern), and only what the
later steps need is cached: the position of every line (to number them) and the text of recognised lines.
Everything after that works on small tables.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pyspark import StorageLevel
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from smoothscale.pipeline import balance, diagnoses, journal_reader, log_lines, restore, timeline
from smoothscale.pipeline.numbered_lines import number, read_lines, scan


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
    inputs: list[
        dict[str, Any]
    ]  # per file: lines, recognised, skipped, unknown (logs) or malformed (journal)


def _log_incidents(spark: SparkSession, inputs: AnalyzeInputs) -> tuple[DataFrame, DataFrame]:
    if not inputs.logs:
        empty = spark.createDataFrame([], "file string, line long, value string")
        classified = log_lines.classify(empty)
        return log_lines.incidents(classified), log_lines.line_counts(classified)
    classified = log_lines.classify(scan(spark, inputs.logs))
    slim = classified.select(
        "file", "block", "row_id", "pattern", "timestamped", "blank",
        F.when(F.col("pattern").isNotNull(), F.col("value")).alias("value"),
    ).persist(StorageLevel.MEMORY_AND_DISK)  # fmt: skip
    counts = log_lines.line_counts(slim)
    incidents = log_lines.incidents(number(slim, F.col("pattern").isNotNull()), inputs.default_date)
    return incidents, counts


def _journal(spark: SparkSession, inputs: AnalyzeInputs) -> tuple[DataFrame, DataFrame]:
    lines = (
        read_lines(spark, inputs.journals)
        if inputs.journals
        else spark.createDataFrame([], "file string, line long, value string")
    )
    parsed = journal_reader.parse_journal(lines).persist(StorageLevel.MEMORY_AND_DISK)
    counts = parsed.groupBy("file").agg(
        F.count(F.lit(1)).alias("lines"), F.sum(F.col("malformed").cast("long")).alias("malformed")
    )
    return parsed.where(~F.col("malformed")).drop("malformed"), counts


def _materialize(spark: SparkSession, frame: DataFrame, out: Path, name: str) -> DataFrame:
    """Write `frame` as the Parquet table `name` and read it back: later steps then plan against a file
    scan instead of re-planning the whole lineage (parsing expressions are large) in every step."""
    path = str(out / "tables" / name)
    frame.coalesce(1).write.mode("overwrite").parquet(path)
    return spark.read.parquet(path)


def analyze(spark: SparkSession, inputs: AnalyzeInputs) -> AnalyzeResult:
    """Build every table, write them as Parquet under `inputs.out/tables`, and return them (read back)."""
    inputs.out.mkdir(parents=True, exist_ok=True)
    found, log_counts = _log_incidents(spark, inputs)
    parsed, journal_counts = _journal(spark, inputs)
    incidents = _materialize(spark, found, inputs.out, "log_incidents")
    journal = _materialize(spark, parsed, inputs.out, "journal")
    rebalances = _materialize(
        spark, timeline.rebalance_timeline(incidents, journal), inputs.out, "rebalances"
    )
    by_task = _materialize(
        spark,
        restore.restore_by_task(journal, restore.zone_table(spark, inputs.zones)),
        inputs.out,
        "warmups",
    )
    derived = {
        "diagnoses": diagnoses.diagnose(rebalances, incidents, journal, inputs.thresholds),
        "restore_by_pod": restore.restore_rollup(by_task, "app", "pod", "zone"),
        "restore_by_zone": restore.restore_rollup(by_task, "app", "zone"),
        "time_to_balance": balance.time_to_balance(journal),
        "cross_zone": restore.cross_zone(journal),
    }
    tables = {"log_incidents": incidents, "journal": journal, "rebalances": rebalances, "warmups": by_task}
    tables |= {name: _materialize(spark, frame, inputs.out, name) for name, frame in derived.items()}
    files = [{"kind": "log", **row.asDict()} for row in log_counts.orderBy("file").collect()]
    files += [{"kind": "journal", **row.asDict()} for row in journal_counts.orderBy("file").collect()]
    return AnalyzeResult(tables=tables, inputs=files)
