"""The rebalance table: one row per consumer-group generation, put together from every source that saw it.

A generation is what a rebalance produces. The broker's coordinator logs when it started preparing it
(`Preparing to rebalance`, with the reason) and when it stabilised (with the member count); each member
logs when it joined it (`Successfully joined group with generation`) and synced it (with the new
consumer protocol, KIP-848: when its state became STABLE at that group epoch); the leader logs the
assignment it computed for it, listing the members (`Finished assignment for group at generation`); a
Connect worker logs the leader it got. Brokers' and clients' logs are often not both at hand: each column
takes whichever source has it.

A rebalance starts, on the clients' side, at the first sign of it after the previous generation completed:
a member rejoining, requesting to join (with its reason), hearing in a heartbeat that the group is
rebalancing, or failing to sync. It ends when the last line about its generation is written. A rebalance
that started and never produced a generation before the logs end is kept with no generation and no end;
so is a Streams client's REBALANCING spell that no generation accounts for (its consumers' lines were
filtered out of the logs).
"""

from __future__ import annotations

from datetime import datetime

from pyspark.sql import Column, DataFrame, Window
from pyspark.sql import functions as F

from smoothscale.pipeline.log_lines import UUID
from smoothscale.pipeline.timeline import cite, seconds_between

COLUMNS = (
    "group",
    "generation",
    "start",
    "end",
    "duration_s",
    "leader",
    "member_count",
    "members",
    "reason",
    "sources",
    "cite",
)
SOURCES = {
    "rebalance-start": "broker",
    "rebalance-stabilized": "broker",
    "assignment-received": "broker",
    "joined": "client",
    "synced": "client",
    "assignment-finished": "leader",
    "group-empty": "broker",
    "member-state": "client",
    "member-epoch": "broker",
}
COMPLETION_KINDS = tuple(SOURCES.keys() - {"rebalance-start"})
# The new consumer protocol (KIP-848) has no generations: its group epoch is their counterpart. A member
# whose state becomes STABLE at epoch n (as it says, and as the coordinator records) has reconciled the
# assignment of group epoch n, as a classic member that synced generation n; its other states complete
# nothing.
EPOCH_KINDS = ("member-state", "member-epoch")
START_KINDS = (
    "rejoining",
    "join-request",
    "heartbeat-rebalancing",
    "sync-failed",
    "rebalance-failed",
    "rebalance-started",
)
# Reasons a member gives for rejoining when in fact it is leaving (closing, unsubscribing): no rebalance
# of its own.
LEAVING = r"(?i)leaving the group|unsubscribed|being closed"
OPEN_END = datetime(9999, 12, 31)  # a rebalance still open when the logs end overlaps all that follows
OVERLAP_SLACK_S = 5  # a Streams client's REBALANCING state trails its consumers' lines by milliseconds
REBALANCE_TIMEOUT_S = 300  # the consumers' default max.poll.interval.ms, which bounds a rebalance
BROKER_LAG_S = 10  # members notice a rebalance after the coordinator started it: allow for clock skew


def client_id(member: Column) -> Column:
    """A member id (`<client id>-<uuid>`) as its client id; a client id unchanged."""
    return F.regexp_replace(member, "-" + UUID + "$", "")


def _assigned_members(listing: Column) -> Column:
    """The member ids in a leader's `Finished assignment` listing (`{member=Assignment(...), ...}`)."""
    found = F.regexp_extract_all(listing, F.lit(r"([^\s=,{}()\[\]]+)=(?:Assignment\(|org\.apache)"), 1)
    return F.array_sort(F.array_distinct(F.transform(found, client_id)))


def _completed(incidents: DataFrame) -> DataFrame:
    """Per group and generation: what its completion lines say."""
    kind = F.col("kind")
    reconciled = ~kind.isin(*EPOCH_KINDS) | (F.col("new_state") == "STABLE")
    lines = incidents.where(kind.isin(*COMPLETION_KINDS) & F.col("generation").isNotNull() & reconciled)
    source = F.create_map(*[F.lit(x) for pair in SOURCES.items() for x in pair])[kind]
    return lines.groupBy("group", "generation").agg(
        F.min("ts").alias("first_seen"),
        F.max("ts").alias("end"),
        F.first(F.when(kind == "assignment-finished", client_id(F.col("member"))), ignorenulls=True).alias(
            "finishing_leader"
        ),
        F.first(
            F.when(kind.isin("assignment-received", "joined"), client_id(F.col("leader"))), ignorenulls=True
        ).alias("named_leader"),
        F.first(F.when(kind == "assignment-finished", F.col("members")), ignorenulls=True).alias("listing"),
        F.max(
            F.when(kind == "group-empty", F.lit(0)).when(
                kind.isin("rebalance-stabilized", "assignment-received"), F.col("consumers")
            )
        ).alias("broker_count"),
        F.array_sort(
            F.collect_set(F.when(kind.isin("joined", "member-state"), client_id(F.col("member"))))
        ).alias("joined"),
        F.collect_set(source).alias("completion_sources"),
        F.min(F.struct("ts", cite().alias("c"))).alias("first_line"),
    )


def _broker_starts(incidents: DataFrame) -> DataFrame:
    """The coordinator's last `Preparing to rebalance` for each generation (a failed attempt is retried)."""
    return (
        incidents.where(F.col("kind") == "rebalance-start")
        .withColumn("generation", F.col("generation") + 1)
        .groupBy("group", "generation")
        .agg(
            F.max("ts").alias("broker_start"),
            F.max_by("reason", "ts").alias("broker_reason"),
            F.min(F.struct("ts", cite().alias("c"))).alias("start_line"),
        )
    )


def _client_starts(incidents: DataFrame) -> DataFrame:
    """The clients' signs that a rebalance began, with the reasons they give (leaving members excluded)."""
    leaving = (F.col("kind") == "join-request") & F.coalesce(F.col("reason").rlike(LEAVING), F.lit(False))
    return incidents.where(F.col("kind").isin(*START_KINDS) & F.col("ts").isNotNull() & ~leaving).select(
        F.col("group").alias("s_group"),
        F.col("ts").alias("s_ts"),
        F.when(F.col("kind") == "join-request", F.col("reason")).alias("s_reason"),
        cite().alias("s_cite"),
    )


def generations(incidents: DataFrame) -> DataFrame:
    """The rebalance table (COLUMNS), one row per group and generation, plus a row without generation for
    a rebalance still open when the group's logs end."""
    known = _completed(incidents).join(_broker_starts(incidents), ["group", "generation"], "full")
    order = Window.partitionBy("group").orderBy("generation")
    known = known.withColumn("previous_end", F.lag("end").over(order))
    starts = _client_starts(incidents)
    # The clients' first sign comes after the previous generation, and not long before the coordinator's
    # start or the first line about this generation (a rebalance lasts at most the rebalance timeout).
    after_previous = F.col("previous_end").isNull() | (F.col("s_ts") > F.col("previous_end"))
    earliest = F.coalesce(
        F.col("broker_start") - F.expr(f"INTERVAL {BROKER_LAG_S} SECONDS"),
        F.col("first_seen") - F.expr(f"INTERVAL {REBALANCE_TIMEOUT_S} SECONDS"),
    )
    window = (
        (starts["s_group"] == known["group"])
        & after_previous
        & (F.col("s_ts") >= earliest)
        & (F.col("s_ts") <= F.coalesce(F.col("end"), F.col("broker_start")))
    )
    with_starts = (
        known.join(starts, window, "left")
        .groupBy(*known.columns)
        .agg(
            F.min("s_ts").alias("client_start"),
            F.array_sort(F.collect_set("s_reason")).alias("client_reasons"),
            F.min(F.struct("s_ts", "s_cite")).alias("client_line"),
        )
    )
    listed = _assigned_members(F.col("listing"))
    members = F.when(F.size(listed) > 0, listed).otherwise(F.col("joined"))
    start = F.least("broker_start", "client_start", "first_seen")
    reason = F.coalesce(
        F.col("broker_reason"),
        F.when(F.size("client_reasons") > 0, F.array_join("client_reasons", "; ")),
    )
    sources = F.array_sort(
        F.array_distinct(
            F.concat(
                F.coalesce(F.col("completion_sources"), F.array().cast("array<string>")),
                F.when(F.col("broker_start").isNotNull(), F.array(F.lit("broker"))).otherwise(F.array()),
                F.when(F.col("client_start").isNotNull(), F.array(F.lit("client"))).otherwise(F.array()),
            )
        )
    )
    completed = with_starts.select(
        "group",
        "generation",
        start.alias("start"),
        "end",
        F.when(F.col("end") >= start, F.round(seconds_between(start, F.col("end")), 3)).alias("duration_s"),
        F.coalesce("finishing_leader", "named_leader").alias("leader"),
        F.coalesce(F.col("broker_count"), F.when(F.size(members) > 0, F.size(members)))
        .cast("long")
        .alias("member_count"),
        members.alias("members"),
        reason.alias("reason"),
        sources.alias("sources"),
        F.coalesce(F.col("start_line.c"), F.col("client_line.s_cite"), F.col("first_line.c")).alias("cite"),
    )
    known_rebalances = completed.unionByName(_still_open(incidents, completed))
    return known_rebalances.unionByName(_streams_rebalances(incidents, known_rebalances))


def _still_open(incidents: DataFrame, completed: DataFrame) -> DataFrame:
    """Per group, the clients' signs of a rebalance after its last completed generation, if any."""
    last_end = completed.groupBy("group").agg(F.max("end").alias("last_end"))
    starts = _client_starts(incidents).join(last_end, F.col("s_group") == F.col("group"), "left")
    pending = starts.where(F.col("last_end").isNull() | (F.col("s_ts") > F.col("last_end")))
    return pending.groupBy(F.col("s_group").alias("group")).agg(
        F.lit(None).cast("long").alias("generation"),
        F.min("s_ts").alias("start"),
        F.lit(None).cast("timestamp").alias("end"),
        F.lit(None).cast("double").alias("duration_s"),
        F.lit(None).cast("string").alias("leader"),
        F.lit(None).cast("long").alias("member_count"),
        F.array().cast("array<string>").alias("members"),
        F.nullif(F.array_join(F.array_sort(F.collect_set("s_reason")), "; "), F.lit("")).alias("reason"),
        F.array(F.lit("client")).alias("sources"),
        F.min(F.struct("s_ts", "s_cite")).getField("s_cite").alias("cite"),
    )


def _streams_rebalances(incidents: DataFrame, known: DataFrame) -> DataFrame:
    """A Streams client's REBALANCING spells (to RUNNING, or still open) that no generation of its group
    accounts for: the only trace of a rebalance when the consumers' lines are filtered out."""
    client = ~F.col("member").rlike(r"-StreamThread-\d+$")
    moves = incidents.where((F.col("kind") == "state-transition") & client & F.col("ts").isNotNull())
    starts = moves.where(F.col("new_state") == "REBALANCING")
    ends = moves.where((F.col("old_state") == "REBALANCING") & (F.col("new_state") == "RUNNING")).select(
        F.col("member").alias("e_member"), F.col("ts").alias("e_ts")
    )
    spells = (
        starts.join(ends, (F.col("member") == F.col("e_member")) & (F.col("e_ts") >= F.col("ts")), "left")
        .groupBy("file", "line", "group", "member", "ts")
        .agg(F.min("e_ts").alias("end"))
    )
    slack = F.expr(f"INTERVAL {OVERLAP_SLACK_S} SECONDS")
    generation = known.select(
        F.col("group").alias("k_group"), F.col("start").alias("k_start"), F.col("end").alias("k_end")
    )
    overlaps = (
        (F.col("k_group") == F.col("group"))
        & (F.col("k_start") <= F.coalesce(F.col("end"), F.col("ts")) + slack)
        & (F.coalesce(F.col("k_end"), F.lit(OPEN_END)) >= F.col("ts") - slack)
    )
    alone = spells.join(generation, overlaps, "left_anti")
    return alone.select(
        "group",
        F.lit(None).cast("long").alias("generation"),
        F.col("ts").alias("start"),
        "end",
        F.round(seconds_between(F.col("ts"), F.col("end")), 3).alias("duration_s"),
        F.lit(None).cast("string").alias("leader"),
        F.lit(None).cast("long").alias("member_count"),
        F.array("member").alias("members"),
        F.lit(None).cast("string").alias("reason"),
        F.array(F.lit("streams")).alias("sources"),
        cite().alias("cite"),
    )
