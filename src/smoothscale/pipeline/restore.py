"""Warmups from the journal: how long each took, how fast it restored, per task, pod and zone; and the
planner's cross-zone traffic estimate per generation.

A warmup is a (task, pod) pair a plan listed under `warmups`. It lasts from the first plan that listed it
until its task was handed over to that pod (`handover` `completed`), or else the last plan that listed it.
Its restore rate comes from the `scrape` records' `warmupLags`: records restored (first lag minus the
lowest lag seen) over the time it took to get to that lowest lag.

Zones are not in the journal; `zones` (pod -> zone) names them when known, else `unknown`.
"""

from __future__ import annotations

from collections.abc import Mapping

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from smoothscale.pipeline.timeline import seconds_between

UNKNOWN_ZONE = "unknown"


def zone_table(spark: SparkSession, zones: Mapping[str, str]) -> DataFrame:
    return spark.createDataFrame(sorted(zones.items()), "pod string, zone string")


def warmup_durations(journal: DataFrame) -> DataFrame:
    listed = (
        journal.where(F.col("kind") == "plan")
        .select("app", "ts", F.explode("warmups").alias("w"))
        .groupBy("app", F.col("w.task").alias("task"), F.col("w.pod").alias("pod"))
        .agg(F.min("ts").alias("start"), F.max("ts").alias("last_listed"))
    )
    completed = journal.where((F.col("kind") == "handover") & (F.col("step") == "completed")).select(
        "app", "task", F.col("to").alias("pod"), F.col("ts").alias("completed")
    )
    return (
        listed.join(completed, ["app", "task", "pod"], "left")
        .where(F.col("completed").isNull() | (F.col("completed") >= F.col("start")))
        .groupBy("app", "task", "pod", "start", "last_listed")
        .agg(F.min("completed").alias("completed"))
        .withColumn("end", F.coalesce("completed", "last_listed"))
        .withColumn("warmup_s", seconds_between(F.col("start"), F.col("end")))
        .withColumn("handed_over", F.col("completed").isNotNull())
        .drop("last_listed", "completed")
    )


def restore_samples(journal: DataFrame) -> DataFrame:
    return (
        journal.where(F.col("kind") == "scrape")
        .select("app", "ts", F.explode("warmupLags").alias("w"))
        .select(
            "app",
            "ts",
            F.col("w.task").alias("task"),
            F.col("w.pod").alias("pod"),
            F.col("w.lag").alias("lag"),
        )
        .where(F.col("lag").isNotNull())
    )


def restore_by_task(journal: DataFrame, zones: DataFrame) -> DataFrame:
    """Per (app, task, pod): zone, warmup start/end/duration, records restored, restore rate (records/s)."""
    rates = (
        restore_samples(journal)
        .groupBy("app", "task", "pod")
        .agg(
            F.min_by("lag", "ts").alias("first_lag"),
            F.min("ts").alias("first_ts"),
            F.min("lag").alias("lowest_lag"),
            F.min_by("ts", F.struct("lag", "ts")).alias("lowest_ts"),
            F.count(F.lit(1)).alias("samples"),
        )
        .withColumn("restored_records", F.col("first_lag") - F.col("lowest_lag"))
        .withColumn("restore_s", seconds_between(F.col("first_ts"), F.col("lowest_ts")))
        .withColumn(
            "restore_rate", F.when(F.col("restore_s") > 0, F.col("restored_records") / F.col("restore_s"))
        )
    )
    return (
        warmup_durations(journal)
        .join(rates, ["app", "task", "pod"], "full")
        .join(F.broadcast(zones), "pod", "left")
        .withColumn("zone", F.coalesce("zone", F.lit(UNKNOWN_ZONE)))
        .select(
            "app", "task", "pod", "zone", "start", "end", "warmup_s", "handed_over",
            "samples", "first_lag", "lowest_lag", "restored_records", "restore_s", "restore_rate",
        )
    )  # fmt: skip


def restore_rollup(by_task: DataFrame, *keys: str) -> DataFrame:
    """Per `keys` (e.g. app and pod, or app and zone): warmups, records restored, the mean per-warmup rate,
    and the throughput: records restored over the span from the first warmup's start to the last one's end
    (what the pod or zone sustained with warmups running side by side)."""
    timed = by_task.where(F.col("restore_rate").isNotNull())
    span = seconds_between(F.min("start"), F.max("end"))
    return timed.groupBy(*keys).agg(
        F.count(F.lit(1)).alias("warmups"),
        F.sum("restored_records").alias("restored_records"),
        F.avg("restore_rate").alias("mean_restore_rate"),
        F.avg("warmup_s").alias("mean_warmup_s"),
        F.when(span > 0, F.sum("restored_records") / span).alias("throughput"),
    )


def cross_zone(journal: DataFrame) -> DataFrame:
    """The planner's cross-rack traffic cost per plan, published and target (Contract 1's stats)."""
    return journal.where(F.col("kind") == "plan").select(
        "app",
        "ts",
        "generation",
        "reason",
        F.col("stats.crossRackCost").alias("cross_zone_cost"),
        F.col("stats.targetCrossRackCost").alias("target_cross_zone_cost"),
        F.col("stats.warmups").alias("warmups"),
        F.col("stats.movedActives").alias("moved_actives"),
    )
