"""The rebalance timeline per consumer group (= Streams app): one row per rebalance as each source saw it.

- `assignor`: the group leader's "N client nodes and M consumers participating in this rebalance" line
  (the guide's Tip 1), with the consumers listed on the lines after it;
- `broker`: the coordinator's "Preparing to rebalance" line (generation = old generation + 1, reason), its
  duration up to "Stabilized group ... generation";
- `client`: a generation of the rebalance table (`generations`) no broker line shows, as the clients saw
  it (leader, members, reason, duration);
- `journal`: each generation the operator published, with the event reason (`nodes`: the pods planned for).
"""

from __future__ import annotations

from pyspark.sql import Column, DataFrame, Window
from pyspark.sql import functions as F

from smoothscale.pipeline.numbered_lines import short_name


def no_members() -> Column:
    """An empty member list (a function: a Column needs a running session)."""
    return F.array().cast("array<string>")


COLUMNS = (
    "group",
    "source",
    "ts",
    "generation",
    "leader",
    "process",
    "nodes",
    "consumers",
    "members",
    "reason",
    "duration_s",
    "cite",
)


def cite() -> Column:
    """`file:line`, the way a report cites a line."""
    return F.concat_ws(":", short_name("file"), F.col("line").cast("string"))


def seconds_between(start: Column, end: Column) -> Column:
    return end.cast("double") - start.cast("double")


def _listed(text: Column) -> Column:
    """The consumers in the assignor's per-node listing (`<process uuid>: [member, member]` lines)."""
    lists = F.regexp_extract_all(text, F.lit(r"[0-9a-f-]{36}: \[([^\]]*)\]"), 1)
    return F.filter(F.flatten(F.transform(lists, lambda items: F.split(items, r",\s*"))), lambda m: m != "")


def assignor_rebalances(incidents: DataFrame) -> DataFrame:
    """The leaders' rebalance lines, each with the consumers listed after it: on the next lines (a plain
    layout), or in the same record (a JSON layout keeps the message's line breaks)."""
    in_file = Window.partitionBy("file").orderBy("line").rowsBetween(Window.unboundedPreceding, 0)
    header = F.last(F.when(F.col("kind") == "participating", F.col("line")), ignorenulls=True).over(in_file)
    listed = (
        incidents.where(F.col("kind").isin("participating", "participants"))
        .withColumn("header", header)
        .where(F.col("kind") == "participants")
        .select("file", F.col("header").alias("line"), F.explode(F.split("members", r",\s*")).alias("m"))
        .groupBy("file", "line")
        .agg(F.array_sort(F.collect_set("m")).alias("listed"))
    )
    inline = _listed(F.coalesce(F.col("members"), F.lit("")))
    members = F.array_sort(F.array_distinct(F.concat(F.coalesce("listed", no_members()), inline)))
    nodes_inline = F.size(
        F.regexp_extract_all(F.coalesce(F.col("members"), F.lit("")), F.lit(r"[0-9a-f-]{36}: \["), 0)
    )
    return (
        incidents.where(F.col("kind") == "participating")
        .join(listed, ["file", "line"], "left")
        .select(
            "group",
            F.lit("assignor").alias("source"),
            "ts",
            F.lit(None).cast("long").alias("generation"),
            F.col("member").alias("leader"),
            "process",
            F.coalesce(F.col("nodes"), F.when(nodes_inline > 0, nodes_inline)).cast("long").alias("nodes"),
            F.coalesce(F.col("consumers"), F.when(F.size(members) > 0, F.size(members)))
            .cast("long")
            .alias("consumers"),
            F.when(F.size(members) > 0, members).alias("members"),
            F.lit(None).cast("string").alias("reason"),
            F.lit(None).cast("double").alias("duration_s"),
            cite().alias("cite"),
        )
    )


def broker_rebalances(incidents: DataFrame) -> DataFrame:
    """The coordinator's rebalances: reason, the generation they lead to and how long they took."""
    stabilized = incidents.where(F.col("kind") == "rebalance-stabilized").select(
        "group", "generation", F.col("ts").alias("stable_ts"), F.col("consumers").alias("stable_members")
    )
    starts = incidents.where(F.col("kind") == "rebalance-start").withColumn(
        "generation", F.col("generation") + 1
    )
    # A generation that failed is started again: its duration runs from the last start to the stabilization.
    return starts.join(stabilized, ["group", "generation"], "left").select(
        "group",
        F.lit("broker").alias("source"),
        "ts",
        "generation",
        F.lit(None).cast("string").alias("leader"),
        F.lit(None).cast("string").alias("process"),
        F.lit(None).cast("long").alias("nodes"),
        F.col("stable_members").alias("consumers"),
        F.lit(None).cast("array<string>").alias("members"),
        "reason",
        F.when(F.col("stable_ts") >= F.col("ts"), seconds_between(F.col("ts"), F.col("stable_ts"))).alias(
            "duration_s"
        ),
        cite().alias("cite"),
    )


def journal_generations(journal: DataFrame) -> DataFrame:
    """Each published generation, with the size of the plan before it and that plan's planning time."""
    until_now = Window.partitionBy("app").orderBy("ts", "line").rowsBetween(Window.unboundedPreceding, 0)

    def latest_plan(column: str) -> Column:
        return F.last(F.when(F.col("kind") == "plan", F.col(column)), ignorenulls=True).over(until_now)

    return (
        journal.where(F.col("kind").isin("plan", "publication"))
        .withColumn("clients", latest_plan("clients"))
        .withColumn("planning_s", latest_plan("durationSeconds"))
        .where(F.col("kind") == "publication")
        .select(
            F.col("app").alias("group"),
            F.lit("journal").alias("source"),
            "ts",
            "generation",
            F.lit(None).cast("string").alias("leader"),
            F.lit(None).cast("string").alias("process"),
            F.col("clients").alias("nodes"),
            F.lit(None).cast("long").alias("consumers"),
            F.lit(None).cast("array<string>").alias("members"),
            "reason",
            F.col("planning_s").alias("duration_s"),
            cite().alias("cite"),
        )
    )


def client_generations(table: DataFrame) -> DataFrame:
    """The generations of the rebalance table that no broker line shows."""
    return table.where(F.col("start").isNotNull() & ~F.array_contains("sources", "broker")).select(
        "group",
        F.lit("client").alias("source"),
        F.col("start").alias("ts"),
        "generation",
        "leader",
        F.lit(None).cast("string").alias("process"),
        F.lit(None).cast("long").alias("nodes"),
        F.col("member_count").alias("consumers"),
        "members",
        "reason",
        "duration_s",
        "cite",
    )


def rebalance_timeline(incidents: DataFrame, journal: DataFrame, table: DataFrame) -> DataFrame:
    return (
        assignor_rebalances(incidents)
        .unionByName(broker_rebalances(incidents))
        .unionByName(client_generations(table))
        .unionByName(journal_generations(journal))
        .orderBy("group", "ts", "source")
    )
