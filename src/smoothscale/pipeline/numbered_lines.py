"""Text files as a DataFrame of lines that know where they came from (`file`, `line`, 1-based).

Diagnoses cite the lines that support them, so every line needs its file and number. Spark's text source
does not number lines; it does expose each row's file and the byte offset of the split the row was read
from (`_metadata.file_block_start`), and `monotonically_increasing_id` numbers rows consecutively inside a
split. A line's number is therefore its position in its split plus the line count of the file's earlier
splits. Those counts come from one cheap aggregation (a row per split, no parsing), computed on the JVM: no
line passes through Python. Gzip files are never split, so they are one split each. When only a few lines
are wanted (the log lines a screen keeps), the same aggregation carries them (`splits_and_kept`), so
the files are read once.
"""

from __future__ import annotations

from collections.abc import Sequence

from pyspark.sql import Column, DataFrame, SparkSession, Window
from pyspark.sql import functions as F


def scan(spark: SparkSession, paths: Sequence[str]) -> DataFrame:
    """Columns `value`, `file` (the path as Spark names it), `block` (its split) and `row_id`; numbered by
    `number`, possibly after filtering them (a row id is the same in every scan of the same files)."""
    return spark.read.text(list(paths)).select(
        F.col("value"),
        F.col("_metadata.file_path").alias("file"),
        F.col("_metadata.file_block_start").alias("block"),
        F.monotonically_increasing_id().alias("row_id"),
    )


def splits(rows: DataFrame, *tallies: Column) -> DataFrame:
    """One row per split of `rows` (from `scan`): its `rows`, `first_row_id` and `lines_before` (lines in
    the file's earlier splits), plus any further `tallies` (aggregates over the split's rows)."""
    by_file = Window.partitionBy("file").orderBy("block")
    return (
        rows.groupBy("file", "block")
        .agg(F.count(F.lit(1)).alias("rows"), F.min("row_id").alias("first_row_id"), *tallies)
        .withColumn("lines_before", F.sum("rows").over(by_file) - F.col("rows"))
    )


def splits_and_kept(rows: DataFrame, keep: Column, *tallies: Column) -> tuple[DataFrame, DataFrame]:
    """In one pass over `rows` (from `scan`): their split table (`splits`, with `tallies`), persisted, and
    the rows `keep` selects, numbered (`file`, `line`, `value`). Counting the lines and filtering them in
    two scans would read and decode every file twice; here each split's kept rows travel as one list
    through the aggregation that counts it, so `keep` must select few rows (a screen of log lines).
    Everything done to the kept rows runs in a later stage, on those rows only."""
    kept = F.collect_list(F.when(keep, F.struct("row_id", "value"))).alias("kept")
    table = splits(rows, *tallies, kept).persist()
    line = F.col("kept.row_id") - F.col("first_row_id") + F.col("lines_before") + 1
    numbered = table.select("file", "first_row_id", "lines_before", F.explode("kept").alias("kept")).select(
        "file", line.alias("line"), F.col("kept.value").alias("value")
    )
    return table.drop("kept"), numbered


def number(rows: DataFrame, split_table: DataFrame) -> DataFrame:
    """`rows` from `scan`, possibly filtered (further columns kept), with `line` (long, from 1) in place of
    block and row_id; `split_table` is `splits` of the unfiltered rows."""
    offsets = split_table.select("file", "block", "first_row_id", "lines_before")
    line = F.col("row_id") - F.col("first_row_id") + F.col("lines_before") + 1
    return (
        rows.join(F.broadcast(offsets), ["file", "block"])
        .withColumn("line", line)
        .drop("block", "row_id", "first_row_id", "lines_before")
    )


def read_lines(spark: SparkSession, paths: Sequence[str]) -> DataFrame:
    """Columns `file`, `line` and `value`: every line of the files."""
    rows = scan(spark, paths)
    return number(rows, splits(rows))


def short_name(file_column: str = "file") -> Column:
    """The file's base name, for citations that fit on a line."""
    return F.regexp_extract(F.col(file_column), r"([^/]+)$", 1)
