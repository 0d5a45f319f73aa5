"""Diagnoses in the terms of the rebalancing guide (seed 003), each with the lines that support it, from
every source that shows them: the assignor's, the clients', the coordinator's lines and the journal.

From the leaders' "participating in this rebalance" lines and from the rebalance table (`generations`),
consecutive rebalances of a group are compared:
- `closely-grouped`: two rebalances within `close_seconds` (the first one almost certainly failed; the
  "SyncGroup failed" lines around it are cited too), unless a member synced the first one's assignment
  or its leader asked for the second (a cooperative rebalance's follow-up, when tasks change owner);
- `leader-change`: the leader is another thread than the previous one;
- `membership-churn` (`churn`): members that left and came back, or came and left again, within
  `churn_window_s`; growth in a scale-out, shrinking in a scale-in and one rebalance swapping a member are
  not churn;
- `regular-probing`: at least `probing_min_rebalances` rebalances at near-identical intervals (within
  `interval_tolerance`, and at least `probing_min_interval_s` apart): warmups taking long to catch up;
  `endless-probing` when such a run lasts until the end of the logs with `endless_min_rebalances` or more.
  The probing rebalances' due times that the leader and its members log (every Streams version from 2.6)
  are compared the same way, for logs without the assignor's "participating" lines (before 3.0).
From the rebalance table alone:
- `rejoin-loop`: `rejoin_min_generations` or more generations in a row with the same members (the same
  count when they are not listed), each starting less than `rejoin_gap_s` after the previous one
  completed: the group does not settle. A cooperative rebalance's follow-up (the members rejoin to give
  up revoked tasks, or at the leader's request) is planned, no loop;
- `slow-rebalance`: a generation that took more than `slow_rebalance_s` (members waited for one that
  stopped without leaving);
- `never-stabilised`: a rebalance that began and produced no generation in the `unstable_s` or more of
  logs after it.
Per member (`member_incidents`): expirations, poll timeouts, thread deaths, client shutdowns, fencing,
coordinator losses, SyncGroup storms, the uncaught exception handlers' actions.
From the journal: `endless-probing` when an app's last `endless_min_rebalances` plans all scheduled a
follow-up (the operator never reached a stable plan).

Findings of one kind about the same member (or group) less than `dedup_seconds` apart are one incident,
with the union of their evidence (`deduplicate`): a heartbeat expiry seen by the coordinator and by the
client is one diagnosis; failures that repeat (storms, loops, failed commits) are chained up to
`repeat_seconds` apart. Then `incident_folding` words each incident and merges the findings another one
explains into it: one row per incident.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import reduce
from typing import Any

from pyspark.sql import Column, DataFrame, Window
from pyspark.sql import functions as F

from smoothscale.pipeline import churn, incident_folding
from smoothscale.pipeline.generations import client_id
from smoothscale.pipeline.member_incidents import member_findings
from smoothscale.pipeline.timeline import cite, no_members, seconds_between

# The reasons members give for a cooperative rebalance's planned follow-up.
PLANNED_REJOIN = r"(?i)need to revoke partitions and re-join|triggered followup rebalance"


@dataclass(frozen=True, slots=True)
class Thresholds:
    close_seconds: float = 1.0
    interval_tolerance: float = 0.02  # relative difference between successive intervals
    probing_min_interval_s: float = 30.0
    probing_min_rebalances: int = 3
    endless_min_rebalances: int = 5
    rejoin_gap_s: float = 10.0
    rejoin_min_generations: int = 3
    slow_rebalance_s: float = 30.0
    unstable_s: float = 60.0
    coordinator_min_s: float = 5.0
    sync_storm_min: int = 3  # failed rounds of one member
    coordinator_loop_min: int = 3
    store_failure_min: int = 2
    churn_window_s: float = 600.0
    dedup_seconds: float = 30.0
    repeat_seconds: float = 120.0
    fold_slack_s: float = 60.0


# Findings that count when they repeat: chained up to `repeat_seconds` apart into one incident.
REPEATING = (
    "sync-storm",
    "coordinator-loop",
    "assignment-store-failure",
    "commit-failed",
    "static-member-blocked",
)
COLUMNS = ("group", "kind", "ts", "end_ts", "members", "interval_s", "detail", "evidence", "occurrences")
SCHEMA = (
    "group string, kind string, ts timestamp, end_ts timestamp, members array<string>, interval_s double,"
    " detail string, evidence array<string>, occurrences long"
)


def _diagnosis(
    frame: DataFrame,
    kind: str,
    detail: Column,
    members: Column,
    evidence: Column,
    end_ts: Column | None = None,
    interval_s: Column | None = None,
    key: Column | None = None,
) -> DataFrame:
    return frame.select(
        "group",
        F.lit(kind).alias("kind"),
        (key if key is not None else F.lit("")).alias("key"),  # "": about the group as a whole
        "ts",
        (end_ts if end_ts is not None else F.col("ts")).alias("end_ts"),
        members.alias("members"),
        (interval_s if interval_s is not None else F.lit(None).cast("double")).alias("interval_s"),
        detail.alias("detail"),
        evidence.alias("evidence"),
    )


def _successive(frame: DataFrame) -> DataFrame:
    """Rebalances (ts, leader, nodes, consumers, members, cite), each with the previous one of its group."""
    order = Window.partitionBy("group").orderBy("ts", "cite")
    for column in ("ts", "leader", "nodes", "consumers", "members", "cite"):
        frame = frame.withColumn(f"prev_{column}", F.lag(column).over(order))
    return frame.where(F.col("prev_ts").isNotNull()).withColumn(
        "gap_s", seconds_between(F.col("prev_ts"), F.col("ts"))
    )


def closely_grouped(pairs: DataFrame, incidents: DataFrame, limits: Thresholds) -> DataFrame:
    # The first one completed when a member synced its assignment or the leader planned the second.
    completed = incidents.where(F.col("kind").isin("synced", "followup-scheduled")).select(
        F.col("group").alias("c_group"), F.col("ts").alias("c_ts")
    )
    between = (completed["c_group"] == pairs["group"]) & completed["c_ts"].between(
        pairs["prev_ts"], pairs["ts"]
    )
    close = pairs.where(F.col("gap_s") < limits.close_seconds).join(completed, between, "left_anti")
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
        "the group leader changed from %s to %s: the previous leader left the group or did not complete"
        " the rebalance",
        F.col("prev_leader"),
        F.col("leader"),
    )
    return _diagnosis(
        changed, "leader-change", detail, F.array("prev_leader", "leader"), F.array("prev_cite", "cite")
    )


def announced_followups(pairs: DataFrame, incidents: DataFrame) -> DataFrame:
    """The leaders' successive rebalances, without those whose earlier rebalance the leader closed with
    "Finished stable assignment of tasks, no followup rebalances required" (every Streams version from
    2.6): the rebalance after it is not a probing follow-up, however regular the intervals look (healthy
    rebalances a few minutes apart, say). A probing rebalance is announced by the leader and comes after
    `probing.rebalance.interval.ms` (10 minutes by default, at least 1)."""
    stable = incidents.where(F.col("kind") == "stable-assignment").select(
        F.col("group").alias("s_group"), F.col("ts").alias("s_ts")
    )
    closed = (F.col("s_group") == F.col("group")) & F.col("s_ts").between(F.col("prev_ts"), F.col("ts"))
    return pairs.join(stable, closed & (F.col("s_ts") < F.col("ts")), "left_anti")


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


def probing_schedules(incidents: DataFrame) -> DataFrame:
    """The probing rebalances that Streams scheduled (leader and members log the due time; the thread that
    triggers it too), one row per group and due time, in the shape `_successive` compares."""
    due = incidents.where(
        F.col("kind").isin("probing-scheduled", "followup-triggered") & F.col("scheduled_ms").isNotNull()
    )
    return (
        due.groupBy("group", "scheduled_ms")
        .agg(
            F.timestamp_millis(F.first("scheduled_ms")).alias("ts"),
            F.min(client_id(F.col("member"))).alias("leader"),
            F.lit(None).cast("long").alias("nodes"),
            F.lit(None).cast("long").alias("consumers"),
            no_members().alias("members"),
            F.min(cite()).alias("cite"),
        )
        .drop("scheduled_ms")
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


def _generation_rows(table: DataFrame) -> DataFrame:
    """The rebalance table's completed generations in the shape `_successive` compares."""
    return table.where(F.col("generation").isNotNull() & F.col("start").isNotNull()).select(
        "group",
        F.col("start").alias("ts"),
        "leader",
        F.lit(None).cast("long").alias("nodes"),
        F.col("member_count").alias("consumers"),
        F.when(F.size("members") > 0, F.col("members")).alias("members"),
        "cite",
    )


def rejoin_loops(table: DataFrame, limits: Thresholds) -> DataFrame:
    """Runs of generations with the same member count, each starting less than `rejoin_gap_s` after the
    previous one completed."""
    order = Window.partitionBy("group").orderBy("generation")
    done = table.where(F.col("generation").isNotNull() & F.col("end").isNotNull())
    gap = seconds_between(F.lag("end").over(order), F.col("start"))
    # The same members again: a rebalance caused by a member joining or leaving is no loop (nor is one
    # that replaced a member by another, as a replaced stream thread does).
    previous = F.lag("members").over(order)
    same_members = F.when(
        (F.size("members") > 0) & (F.size(previous) > 0), F.col("members") == previous
    ).otherwise(F.col("member_count").eqNullSafe(F.lag("member_count").over(order)))
    planned = F.coalesce(F.col("reason").rlike(PLANNED_REJOIN), F.lit(False))
    chained = done.withColumn(
        "chained", F.coalesce((gap < limits.rejoin_gap_s) & same_members & ~planned, F.lit(False))
    )
    run = F.sum(F.when(F.col("chained"), 0).otherwise(1)).over(
        order.rowsBetween(Window.unboundedPreceding, 0)
    )
    runs = (
        chained.withColumn("run", run)
        .groupBy("group", "run")
        .agg(
            F.count(F.lit(1)).alias("count"),
            F.min("generation").alias("first"),
            F.max("generation").alias("last"),
            F.min("start").alias("ts"),
            F.max("end").alias("end_ts"),
            F.array_sort(F.array_distinct(F.flatten(F.collect_list("members")))).alias("members"),
            F.array_sort(F.collect_list("cite")).alias("evidence"),
            F.array_join(F.array_sort(F.collect_set("reason")), "; ").alias("reasons"),
            F.array_join(
                F.transform(F.array_sort(F.collect_list("end")), lambda t: F.date_format(t, "HH:mm:ss.SSS")),
                ", ",
            ).alias("ends"),
        )
        .where(F.col("count") >= limits.rejoin_min_generations)
    )
    span = seconds_between(F.col("ts"), F.col("end_ts"))
    detail = F.format_string(
        "%d rebalances in %.1f s (generations %d to %d, completed at %s), each starting less than %.0f s"
        " after the previous one completed: the group does not settle; %s",
        F.col("count"),
        span,
        F.col("first"),
        F.col("last"),
        F.col("ends"),
        F.lit(limits.rejoin_gap_s),
        F.when(F.col("reasons") != "", F.concat(F.lit("reasons logged: "), F.col("reasons"))).otherwise(
            F.lit(
                "no reason logged (members rejoined right after an assignment: metadata or subscription"
                " changes, an eager protocol's revocations)"
            )
        ),
    )
    return _diagnosis(runs, "rejoin-loop", detail, F.col("members"), F.col("evidence"), F.col("end_ts"), span)


def slow_rebalances(table: DataFrame, incidents: DataFrame, limits: Thresholds) -> DataFrame:
    """Generations that took more than `slow_rebalance_s`, naming the members that died or left just
    before or during them (the ones the group was waiting for)."""
    slow = table.where(F.col("duration_s") > limits.slow_rebalance_s).withColumn("ts", F.col("start"))
    gone = incidents.where(
        (
            (F.col("kind") == "state-transition")
            & (F.col("new_state") == "DEAD")
            & F.col("member").contains("-StreamThread-")
        )
        | F.col("kind").isin("leave-group", "member-left", "heartbeat-expired")
    ).select(
        F.col("group").alias("g_group"),
        F.col("ts").alias("g_ts"),
        F.concat_ws(
            " ",
            client_id(F.col("member")),
            F.when(F.col("kind") == "state-transition", "died").otherwise("left"),
        ).alias("what"),
    )
    lookback = F.expr(f"INTERVAL {int(limits.slow_rebalance_s * 10)} SECONDS")
    near = (F.col("g_group") == F.col("group")) & F.col("g_ts").between(
        F.col("start") - lookback, F.col("end")
    )
    named = (
        slow.join(gone, near, "left")
        .groupBy(*slow.columns)
        .agg(F.array_sort(F.collect_set("what")).alias("gone"))
    )
    detail = F.format_string(
        "generation %d took %.1f s to complete with %s members%s: the group waited for members that did not"
        " rejoin (one that stopped without leaving is only dropped after its session or rebalance timeout)%s",
        F.col("generation"),
        F.col("duration_s"),
        F.coalesce(F.col("member_count").cast("string"), F.lit("?")),
        F.when(
            F.col("reason").isNotNull(), F.concat(F.lit(" (reason: "), F.col("reason"), F.lit(")"))
        ).otherwise(""),
        F.when(F.size("gone") > 0, F.concat(F.lit("; just before: "), F.array_join("gone", ", "))).otherwise(
            ""
        ),
    )
    return _diagnosis(
        named, "slow-rebalance", detail, F.col("members"), F.array("cite"), F.col("end"), F.col("duration_s")
    )


def unstable(table: DataFrame, incidents: DataFrame, limits: Thresholds) -> DataFrame:
    """Rebalances that began and had produced no generation `unstable_s` or more later, when logs end."""
    last_seen = incidents.groupBy("group").agg(F.max("ts").alias("last_ts"))
    open_ = (
        table.where(F.col("end").isNull() & F.col("start").isNotNull())
        .join(last_seen, "group")
        .withColumn("ts", F.col("start"))
    )
    waited = seconds_between(F.col("start"), F.col("last_ts"))
    stuck = open_.where(waited >= limits.unstable_s)
    detail = F.format_string(
        "a rebalance began and no generation completed in the %.0f s of logs after it%s: the group never"
        " stabilised",
        waited,
        F.when(
            F.col("reason").isNotNull(), F.concat(F.lit(" (reason: "), F.col("reason"), F.lit(")"))
        ).otherwise(""),
    )
    return _diagnosis(
        stuck, "never-stabilised", detail, F.col("members"), F.array("cite"), F.col("last_ts"), waited
    )


def deduplicate(findings: DataFrame, window_s: float, repeat_s: float | None = None) -> DataFrame:
    """One row per incident: findings of one group, kind and key whose times are less than `window_s`
    apart (`repeat_s` for the REPEATING kinds; measured from the end of the incident so far) are merged,
    and so are those without a time; `occurrences` counts them."""
    order = Window.partitionBy("group", "kind", "key").orderBy("ts", "end_ts")
    so_far = F.max("end_ts").over(order.rowsBetween(Window.unboundedPreceding, -1))
    window = F.when(F.col("kind").isin(*REPEATING), F.lit(repeat_s or window_s)).otherwise(F.lit(window_s))
    starts = F.when(so_far.isNull() | (seconds_between(so_far, F.col("ts")) > window), 1).otherwise(0)
    # Findings of lines without any time (an excerpt pasted without stamps) are one incident per key.
    numbered = findings.withColumn("starts", starts).withColumn(
        "incident",
        F.when(F.col("ts").isNull(), F.lit(0)).otherwise(
            F.sum("starts").over(order.rowsBetween(Window.unboundedPreceding, 0))
        ),
    )
    by_time = F.array_sort(F.collect_list(F.struct("ts", "detail", "members", "evidence")))
    return numbered.groupBy("group", "kind", "key", "incident").agg(
        F.min("ts").alias("ts"),
        F.max("end_ts").alias("end_ts"),
        F.array_distinct(F.flatten(F.transform(by_time, lambda item: item["members"]))).alias("members"),
        F.max("interval_s").alias("interval_s"),
        F.array_join(F.array_distinct(F.transform(by_time, lambda item: item["detail"])), "; ").alias(
            "detail"
        ),
        F.array_distinct(F.flatten(F.transform(by_time, lambda item: item["evidence"]))).alias("evidence"),
        F.count(F.lit(1)).alias("occurrences"),
    )


def _churn_rows(pairs: list[DataFrame], limits: Thresholds) -> list[dict[str, Any]]:
    columns = ("group", "ts", "prev_ts", "nodes", "prev_nodes", "consumers", "prev_consumers", "members",
               "prev_members", "cite", "prev_cite")  # fmt: skip
    rows = [row.asDict() for frame in pairs for row in frame.select(*columns).collect()]
    return churn.churn(rows, limits.churn_window_s, limits.dedup_seconds)


def diagnose(
    timeline: DataFrame,
    incidents: DataFrame,
    journal: DataFrame,
    table: DataFrame,
    limits: Thresholds | None = None,
) -> DataFrame:
    """Every diagnosis: group, kind, ts, end_ts, members, interval_s, detail (plain words), evidence and
    occurrences (the findings merged into it), one row per incident."""
    limits = limits or Thresholds()
    recognised = incidents.where(F.col("kind") != "unrecognised")
    assignor = _successive(timeline.where(F.col("source") == "assignor"))
    by_generation = _successive(_generation_rows(table))
    parts = [
        closely_grouped(assignor, recognised, limits),
        leader_changes(assignor),
        leader_changes(by_generation),
        probing_runs(announced_followups(assignor, recognised), limits),
        probing_runs(_successive(probing_schedules(recognised)), limits),
        rejoin_loops(table, limits),
        slow_rebalances(table, recognised, limits),
        unstable(table, recognised, limits),
        journal_endless_probing(journal, limits),
    ]
    group_level = reduce(DataFrame.unionByName, parts)
    members = member_findings(recognised, limits.dedup_seconds * 4, limits.coordinator_min_s)
    merged = deduplicate(group_level.unionByName(members), limits.dedup_seconds, limits.repeat_seconds)
    rows = [row.asDict() for row in merged.select(*COLUMNS).collect()]
    rows += _churn_rows([assignor, by_generation], limits)
    least = incident_folding.Minimums(
        sync_storm=limits.sync_storm_min,
        coordinator_loop=limits.coordinator_loop_min,
        assignment_store_failure=limits.store_failure_min,
        slack_s=limits.fold_slack_s,
    )
    # Incidents without a time (lines pasted without stamps) cannot be folded by time: they stay as found.
    untimed = [row for row in rows if row["ts"] is None]
    found = incident_folding.one_per_incident([row for row in rows if row["ts"] is not None], least)
    found += incident_folding.repeated_enough(untimed, least)
    return incidents.sparkSession.createDataFrame(
        [tuple(r[c] for c in COLUMNS) for r in found], SCHEMA
    ).orderBy("group", "ts", "kind")
