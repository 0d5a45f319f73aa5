"""Diagnoses in the terms of the rebalancing guide (seed 003), each with the lines that support it.

From the leaders' "participating in this rebalance" lines, consecutive rebalances of a group are compared:
- `closely-grouped`: two rebalances within `close_seconds` (the first one almost certainly failed; the
  "SyncGroup failed" lines around it are cited too);
- `leader-change`: the line comes from another thread than the previous one;
- `membership-churn`: the count of nodes or consumers changed; the consumers that came and went are named
  when the assignor listed them;
- `regular-probing`: at least `probing_min_rebalances` rebalances at near-identical intervals (within
  `interval_tolerance`, and at least `probing_min_interval_s` apart): warmups taking long to catch up;
  `endless-probing` when such a run lasts until the end of the logs with `endless_min_rebalances` or more.
From single lines: `heartbeat-expiration`, `poll-timeout`, `thread-replacement`, `shutdown-request`.
From the journal: `endless-probing` when an app's last `endless_min_rebalances` plans all scheduled a
follow-up (the operator never reached a stable plan).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import reduce

from pyspark.sql import Column, DataFrame, Window
from pyspark.sql import functions as F

from smoothscale.pipeline.timeline import cite, seconds_between


@dataclass(frozen=True, slots=True)
class Thresholds:
    close_seconds: float = 1.0
    interval_tolerance: float = 0.02  # relative difference between successive intervals
    probing_min_interval_s: float = 30.0
    probing_min_rebalances: int = 3
    endless_min_rebalances: int = 5


def no_members() -> Column:
    """An empty member list (a function: a Column needs a running session)."""
    return F.array().cast("array<string>")


def _diagnosis(
    frame: DataFrame,
    kind: str,
    detail: Column,
    members: Column,
    evidence: Column,
    end_ts: Column | None = None,
    interval_s: Column | None = None,
) -> DataFrame:
    return frame.select(
        "group",
        F.lit(kind).alias("kind"),
        "ts",
        (end_ts if end_ts is not None else F.col("ts")).alias("end_ts"),
        members.alias("members"),
        (interval_s if interval_s is not None else F.lit(None).cast("double")).alias("interval_s"),
        detail.alias("detail"),
        evidence.alias("evidence"),
    )


def _successive(timeline: DataFrame) -> DataFrame:
    """The leaders' rebalances, each with the previous one of its group."""
    order = Window.partitionBy("group").orderBy("ts", "cite")
    frame = timeline.where(F.col("source") == "assignor")
    for column in ("ts", "leader", "nodes", "consumers", "members", "cite"):
        frame = frame.withColumn(f"prev_{column}", F.lag(column).over(order))
    return frame.where(F.col("prev_ts").isNotNull()).withColumn(
        "gap_s", seconds_between(F.col("prev_ts"), F.col("ts"))
    )


def closely_grouped(pairs: DataFrame, incidents: DataFrame, limits: Thresholds) -> DataFrame:
    close = pairs.where(F.col("gap_s") < limits.close_seconds)
    failures = incidents.where(F.col("kind").isin("sync-failed", "join-failed")).select(
        F.col("group").alias("f_group"), F.col("ts").alias("f_ts"), cite().alias("f_cite")
    )
    window = (
        (failures["f_group"] == close["group"])
        & (failures["f_ts"] >= close["prev_ts"] - F.expr("INTERVAL 1 SECOND"))
        & (failures["f_ts"] <= close["ts"])
    )
    with_failures = (
        close.join(failures, window, "left")
        .groupBy("group", "ts", "prev_ts", "gap_s", "leader", "prev_cite", "cite")
        .agg(F.array_sort(F.collect_set("f_cite")).alias("failure_cites"))
    )
    detail = F.format_string(
        "two rebalances %.3f s apart, led by %s: the first almost certainly failed"
        " (a new rebalance began before it completed)%s",
        F.col("gap_s"),
        F.col("leader"),
        F.when(F.size("failure_cites") > 0, F.lit("; SyncGroup/JoinGroup failures confirm it")).otherwise(""),
    )
    return _diagnosis(
        with_failures,
        "closely-grouped",
        detail,
        F.array("leader"),
        F.concat(F.array("prev_cite", "cite"), F.col("failure_cites")),
        interval_s=F.col("gap_s"),
    )


def leader_changes(pairs: DataFrame) -> DataFrame:
    changed = pairs.where(F.col("leader") != F.col("prev_leader"))
    detail = F.format_string(
        "the group leader changed from %s to %s: the previous leader did not complete the rebalance",
        F.col("prev_leader"),
        F.col("leader"),
    )
    return _diagnosis(
        changed, "leader-change", detail, F.array("prev_leader", "leader"), F.array("prev_cite", "cite")
    )


def membership_churn(pairs: DataFrame) -> DataFrame:
    changed = pairs.where(
        (F.col("nodes") != F.col("prev_nodes")) | (F.col("consumers") != F.col("prev_consumers"))
    )
    left = F.array_except(F.coalesce("prev_members", no_members()), F.coalesce("members", no_members()))
    joined = F.array_except(F.coalesce("members", no_members()), F.coalesce("prev_members", no_members()))
    detail = F.format_string(
        "membership changed from %d nodes / %d consumers to %d nodes / %d consumers%s%s",
        F.col("prev_nodes"),
        F.col("prev_consumers"),
        F.col("nodes"),
        F.col("consumers"),
        F.when(F.size(left) > 0, F.concat(F.lit("; gone: "), F.array_join(left, ", "))).otherwise(""),
        F.when(F.size(joined) > 0, F.concat(F.lit("; came: "), F.array_join(joined, ", "))).otherwise(""),
    )
    return _diagnosis(
        changed, "membership-churn", detail, F.concat(left, joined), F.array("prev_cite", "cite")
    )


def probing_runs(pairs: DataFrame, limits: Thresholds) -> DataFrame:
    """Runs of near-equal intervals between rebalances; each run becomes `regular-probing`, and the last
    run of a group that lasts to the group's last rebalance and is long enough also `endless-probing`."""
    order = Window.partitionBy("group").orderBy("ts", "cite")
    spaced = pairs.where(F.col("gap_s") >= limits.probing_min_interval_s)
    previous_gap = F.lag("gap_s").over(order)
    breaks = (
        F.when(previous_gap.isNull(), 1)
        .when(F.abs(F.col("gap_s") - previous_gap) > F.col("gap_s") * limits.interval_tolerance, 1)
        .otherwise(0)
    )
    last_rebalance = pairs.groupBy("group").agg(F.max("ts").alias("group_last_ts"))
    runs = (
        spaced.withColumn("run", F.sum(breaks).over(order.rowsBetween(Window.unboundedPreceding, 0)))
        .groupBy("group", "run")
        .agg(
            F.min("prev_ts").alias("ts"),
            F.max("ts").alias("end_ts"),
            F.avg("gap_s").alias("interval_s"),
            (F.count(F.lit(1)) + 1).alias("rebalances"),
            F.array_sort(F.array_distinct(F.flatten(F.collect_list(F.array("prev_cite", "cite"))))).alias(
                "cites"
            ),
            F.array_sort(F.collect_set("leader")).alias("leaders"),
        )
        .where(F.col("rebalances") >= limits.probing_min_rebalances)
        .join(last_rebalance, "group")
    )
    regular = _diagnosis(
        runs,
        "regular-probing",
        F.format_string(
            "%d rebalances every %.0f s: probing rebalances, warmup tasks are slow to catch up"
            " (consider more max.warmup.replicas or standbys)",
            F.col("rebalances"),
            F.col("interval_s"),
        ),
        F.col("leaders"),
        F.col("cites"),
        end_ts=F.col("end_ts"),
        interval_s=F.col("interval_s"),
    )
    endless = _diagnosis(
        runs.where(
            (F.col("end_ts") == F.col("group_last_ts"))
            & (F.col("rebalances") >= limits.endless_min_rebalances)
        ),
        "endless-probing",
        F.format_string(
            "probing rebalances every %.0f s until the end of the logs (%d so far):"
            " no stable assignment in sight",
            F.col("interval_s"),
            F.col("rebalances"),
        ),
        F.col("leaders"),
        F.col("cites"),
        end_ts=F.col("end_ts"),
        interval_s=F.col("interval_s"),
    )
    return regular.unionByName(endless)


def _reason_member(pattern: str) -> Column:
    return F.nullif(F.regexp_extract(F.col("reason"), pattern, 1), F.lit(""))


def expirations(incidents: DataFrame) -> DataFrame:
    """Heartbeat and poll-interval expirations, on the client's lines or in the coordinator's reasons."""
    heartbeat_member = _reason_member(r"(?i)removing member (\S+) on heartbeat expiration")
    poll_member = _reason_member(r"Removing member (\S+) on LeaveGroup; client reason: consumer poll timeout")
    frame = incidents.where(F.col("ts").isNotNull()).withColumn(
        "who",
        F.when(F.col("kind") == "rebalance-start", F.coalesce(heartbeat_member, poll_member)).otherwise(
            F.col("member")
        ),
    )
    kind = (
        F.when(F.col("kind").isin("heartbeat-expired", "heartbeat-failed"), "heartbeat-expiration")
        .when(F.col("kind") == "poll-timeout", "poll-timeout")
        .when((F.col("kind") == "rebalance-start") & heartbeat_member.isNotNull(), "heartbeat-expiration")
        .when((F.col("kind") == "rebalance-start") & poll_member.isNotNull(), "poll-timeout")
        .when(F.col("kind") == "thread-replaced", "thread-replacement")
        .when(F.col("kind") == "shutdown-requested", "shutdown-request")
    )
    explained = {
        "heartbeat-expiration": "missed its heartbeats (session timeout): the coordinator removed it",
        "poll-timeout": "did not call poll within max.poll.interval.ms and left the group",
        "thread-replacement": "a StreamThread died and was replaced (REPLACE_THREAD): the group rebalances",
        "shutdown-request": "requested an application-wide shutdown (SHUTDOWN_APPLICATION)",
    }
    words = F.create_map(*[F.lit(x) for pair in explained.items() for x in pair])
    found = frame.withColumn("diagnosis", kind).where(F.col("diagnosis").isNotNull())
    return found.select(
        "group",
        F.col("diagnosis").alias("kind"),
        "ts",
        F.col("ts").alias("end_ts"),
        F.array(F.col("who")).alias("members"),
        F.lit(None).cast("double").alias("interval_s"),
        F.concat_ws(" ", F.col("who"), words[F.col("diagnosis")]).alias("detail"),
        F.array(cite()).alias("evidence"),
    )


def journal_endless_probing(journal: DataFrame, limits: Thresholds) -> DataFrame:
    """Apps whose last plans all scheduled a follow-up: the operator kept probing until the journal ends."""
    latest_first = Window.partitionBy("app").orderBy(F.col("ts").desc(), F.col("line").desc())
    plans = (
        journal.where(F.col("kind") == "plan")
        .withColumn("recent", F.row_number().over(latest_first))
        .where(F.col("recent") <= limits.endless_min_rebalances)
        .groupBy("app")
        .agg(
            F.count(F.lit(1)).alias("plans"),
            F.sum(F.col("stable").cast("int")).alias("stable_plans"),
            F.min("ts").alias("ts"),
            F.max("ts").alias("end_ts"),
            F.array_sort(F.collect_list(cite())).alias("evidence"),
            F.first(F.col("followup.reason"), ignorenulls=True).alias("followup_reason"),
            F.avg(F.col("followup.probeAfterSeconds")).alias("interval_s"),
        )
        .where((F.col("plans") >= limits.endless_min_rebalances) & (F.col("stable_plans") == 0))
        .withColumnRenamed("app", "group")
    )
    detail = F.format_string(
        "the operator's last %d plans all scheduled a follow-up (%s): it has not reached a stable assignment",
        F.col("plans"),
        F.coalesce(F.col("followup_reason"), F.lit("no reason given")),
    )
    return _diagnosis(
        plans,
        "endless-probing",
        detail,
        no_members(),
        F.col("evidence"),
        F.col("end_ts"),
        F.col("interval_s"),
    )


def diagnose(
    timeline: DataFrame, incidents: DataFrame, journal: DataFrame, limits: Thresholds | None = None
) -> DataFrame:
    """Every diagnosis: group, kind, ts, end_ts, members, interval_s, detail (plain words), evidence."""
    limits = limits or Thresholds()
    pairs = _successive(timeline)
    parts = [
        closely_grouped(pairs, incidents, limits),
        leader_changes(pairs),
        membership_churn(pairs),
        probing_runs(pairs, limits),
        expirations(incidents),
        journal_endless_probing(journal, limits),
    ]
    return reduce(DataFrame.unionByName, parts).orderBy("group", "ts", "kind")
