"""Time to balance per scaling event, from the journal.

A scaling event is a burst of `scaling` records that change the membership (`create`, `leaving`,
`restart`, `lost`) of one app; records less than `burst_seconds` apart belong to the same event (a
scale-out creates its pods one record at a time). The event is balanced at the first stable plan after its
last record: the operator needs no follow-up, every warmup has been promoted.
"""

from __future__ import annotations

from pyspark.sql import DataFrame, Window
from pyspark.sql import functions as F

from smoothscale.pipeline.timeline import seconds_between

MEMBERSHIP_STEPS = ("create", "leaving", "restart", "lost")


def scaling_events(journal: DataFrame, burst_seconds: float = 30.0) -> DataFrame:
    order = Window.partitionBy("app").orderBy("ts", "line")
    steps = journal.where((F.col("kind") == "scaling") & F.col("step").isin(*MEMBERSHIP_STEPS))
    gap = seconds_between(F.lag("ts").over(order), F.col("ts"))
    starts = F.when(gap.isNull() | (gap > burst_seconds), 1).otherwise(0)
    return (
        steps.withColumn("event", F.sum(starts).over(order.rowsBetween(Window.unboundedPreceding, 0)))
        .groupBy("app", "event")
        .agg(
            F.min("ts").alias("start"),
            F.max("ts").alias("last_step"),
            F.array_sort(F.collect_set("step")).alias("steps"),
            F.array_sort(F.collect_set("pod")).alias("pods"),
            F.first("reason").alias("reason"),
        )
    )


def time_to_balance(journal: DataFrame, burst_seconds: float = 30.0) -> DataFrame:
    """Per event: app, event (1, 2, ...), start, steps, pods, reason, balanced_at, time_to_balance_s (null
    when the journal ends before a stable plan)."""
    events = scaling_events(journal, burst_seconds).withColumn("stable_ts", F.lit(None).cast("timestamp"))
    stable = (
        journal.where((F.col("kind") == "plan") & F.col("stable"))
        .select("app", F.col("ts").alias("last_step"), F.col("ts").alias("stable_ts"))
        .withColumn("event", F.lit(None).cast("long"))
    )
    # The next stable plan after each event's last step: a window over events and stable plans in time order.
    later = Window.partitionBy("app").orderBy("last_step", F.col("event").asc_nulls_first())
    next_stable = F.first("stable_ts", ignorenulls=True).over(later.rowsBetween(1, Window.unboundedFollowing))
    return (
        events.unionByName(stable, allowMissingColumns=True)
        .withColumn("balanced_at", next_stable)
        .where(F.col("event").isNotNull())
        .withColumn("time_to_balance_s", seconds_between(F.col("start"), F.col("balanced_at")))
        .select("app", "event", "start", "steps", "pods", "reason", "balanced_at", "time_to_balance_s")
        .orderBy("app", "event")
    )
