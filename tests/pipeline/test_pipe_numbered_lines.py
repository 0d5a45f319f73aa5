"""Line numbers of the lines a screen keeps, read in one pass over files Spark cuts into many splits.

Diagnoses cite `file:line`; a wrong offset between splits would cite the wrong line. Spark splits files of
128 MB; the test lowers that to a few kilobytes so that a small file spans dozens of splits (a gzip file
stays one split).
"""

from __future__ import annotations

import gzip
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from pyspark.sql import functions as F

from smoothscale.pipeline.numbered_lines import scan, splits_and_kept

LINES = 3_000
MARKED = {1, 2, 999, 1_000, 1_001, 2_345, LINES}


@pytest.fixture
def small_splits(spark: Any) -> Iterator[Any]:
    key = "spark.sql.files.maxPartitionBytes"
    before = spark.conf.get(key)
    spark.conf.set(key, "4096")
    yield spark
    spark.conf.set(key, before)


def _text() -> str:
    rows = [f"line {n} {'MARK' if n in MARKED else 'noise'} {'x' * (n % 37)}" for n in range(1, LINES + 1)]
    return "\n".join(rows) + "\n"


def test_kept_lines_carry_their_own_numbers_across_splits(small_splits: Any, tmp_path: Path) -> None:
    plain = tmp_path / "plain.log"
    plain.write_text(_text())
    packed = tmp_path / "packed.log.gz"
    with gzip.open(packed, "wt") as out:
        out.write(_text())
    rows = scan(small_splits, [str(plain), str(packed)])
    table, kept = splits_and_kept(rows, F.col("value").contains("MARK"), F.sum(F.lit(1)).alias("tally"))

    found = {(Path(r.file).name, r.line, r.value.split()[1]) for r in kept.collect()}
    expected = {(name, n, str(n)) for name in ("plain.log", "packed.log.gz") for n in MARKED}
    assert found == expected

    per_file = {
        Path(r.file).name: r
        for r in table.groupBy("file")
        .agg(F.count(F.lit(1)).alias("splits"), F.sum("rows").alias("rows"), F.sum("tally").alias("tally"))
        .collect()
    }
    assert per_file["plain.log"].splits > 10  # the offsets between splits were exercised
    assert per_file["packed.log.gz"].splits == 1
    assert {name: (r.rows, r.tally) for name, r in per_file.items()} == {
        "plain.log": (LINES, LINES),
        "packed.log.gz": (LINES, LINES),
    }
