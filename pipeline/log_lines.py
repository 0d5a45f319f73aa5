"""The Kafka broker, consumer and Kafka Streams log lines that tell a rebalance's story, as the rebalancing
guide (seed 003) quotes them, and their parsing into one DataFrame of incidents.

Each `LinePattern` pairs a literal marker (a cheap `contains` test that every line goes through) with the
regular expression that extracts the fields from the few lines that carry the marker; both run on the JVM.
Lines that match no pattern are counted, never fatal: `skipped` when they look like log lines (they start
with a timestamp), `unknown` when they do not (another format, a stack trace, garbage).

Timestamps are log4j's `[2026-11-21 11:08:54,694]`; the guide's shortened `[11:08:54,694]` is read on the
date given by `default_date`. Assignor lines name the thread `<app>-<process uuid>-StreamThread-<n>-consumer`:
the app (= consumer group) and the process (= node) are taken from it.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from functools import reduce

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

FIELDS = (
    "group",
    "member",
    "generation",
    "reason",
    "nodes",
    "consumers",
    "scheduled_ms",
    "process",
    "members",
)
NUMERIC_FIELDS = frozenset({"generation", "nodes", "consumers", "scheduled_ms"})

_UUID = r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}"
_CLIENT = r"\[Consumer clientId=([^,\]]+), groupId=([^\]]+)\]"
TIMESTAMP = r"^\[(\d{4}-\d{2}-\d{2}[ T])?(\d{2}:\d{2}:\d{2})[,.](\d{3})\]"


@dataclass(frozen=True, slots=True)
class LinePattern:
    kind: str
    marker: str  # a literal every matching line contains
    regex: str  # Java- and Python-compatible; its groups fill `fields` in order
    fields: tuple[str, ...]


PATTERNS: tuple[LinePattern, ...] = (
    LinePattern(
        "rebalance-start",
        "Preparing to rebalance group",
        r"Preparing to rebalance group (\S+) in state \w+ with old generation (\d+) .*?\(reason: (.*)\)\s*$",
        ("group", "generation", "reason"),
    ),
    LinePattern(
        "rebalance-stabilized",
        "Stabilized group",
        r"Stabilized group (\S+) generation (\d+) .*?with (\d+) members",
        ("group", "generation", "consumers"),
    ),
    LinePattern(
        "participating",
        "participating in this rebalance",
        r"stream-thread \[((\S+?)-(" + _UUID + r")-StreamThread-\d+-consumer)\] (\d+) client nodes and (\d+)"
        r" consumers participating",
        ("member", "group", "process", "nodes", "consumers"),
    ),
    LinePattern(
        "heartbeat-expired",
        "has failed, removing it from the group",
        r"Member (\S+) in group (\S+) has failed, removing it from the group",
        ("member", "group"),
    ),
    LinePattern(
        "heartbeat-expired",
        "session timed out without receiving a heartbeat response",
        _CLIENT + r".*session timed out without receiving a heartbeat response",
        ("member", "group"),
    ),
    LinePattern(
        "heartbeat-failed",
        "resetting generation",
        _CLIENT
        + r".*Attempt to heartbeat with .*generationId=(\d+).* failed due to (.*?), resetting generation",
        ("member", "group", "generation", "reason"),
    ),
    LinePattern(
        "poll-timeout",
        "sending LeaveGroup request to coordinator due to consumer poll timeout",
        _CLIENT + r".*sending LeaveGroup request to coordinator due to (consumer poll timeout.*?)\.?$",
        ("member", "group", "reason"),
    ),
    LinePattern(
        "leave-group",
        "sending LeaveGroup request to coordinator due to",
        _CLIENT + r".*sending LeaveGroup request to coordinator due to (.*?)\.?$",
        ("member", "group", "reason"),
    ),
    LinePattern(
        "sync-failed",
        "SyncGroup failed",
        _CLIENT + r".*SyncGroup failed: (.*?)(?: Sent generation was Generation\{generationId=(\d+).*)?$",
        ("member", "group", "reason", "generation"),
    ),
    LinePattern(
        "join-failed",
        "JoinGroup failed",
        _CLIENT + r".*JoinGroup failed: (.*?)\s*$",
        ("member", "group", "reason"),
    ),
    LinePattern(
        "join-request",
        "Request joining group due to",
        _CLIENT + r".*Request joining group due to:? (.*?)\s*$",
        ("member", "group", "reason"),
    ),
    LinePattern(
        "followup-scheduled",
        "Requesting followup rebalance be scheduled immediately",
        r"stream-thread \[((\S+?)-"
        + _UUID
        + r"-StreamThread-\d+-consumer)\] Requesting followup rebalance be"
        r" scheduled immediately by (\S+) due to (.*?)\.?\s*$",
        ("member", "group", "process", "reason"),
    ),
    LinePattern(
        "probing-scheduled",
        "to probe for caught-up replica tasks",
        r"stream-thread \[((\S+?)-"
        + _UUID
        + r"-StreamThread-\d+-consumer)\] Requesting followup rebalance be"
        r" scheduled by (\S+) for (\d+) to probe for caught-up replica tasks",
        ("member", "group", "process", "scheduled_ms"),
    ),
    LinePattern(
        "probing-scheduled",
        "Requested to schedule next probing rebalance at",
        r"stream-thread \[((\S+?)-" + _UUID + r"-StreamThread-\d+-consumer)\].*Requested to schedule next"
        r" probing rebalance at (\d+)",
        ("member", "group", "scheduled_ms"),
    ),
    LinePattern(
        "followup-triggered",
        "Triggering the followup rebalance scheduled for",
        r"stream-thread \[((\S+?)-" + _UUID + r"-StreamThread-\d+)\].*Triggering the followup rebalance"
        r" scheduled for (\d+)",
        ("member", "group", "scheduled_ms"),
    ),
    LinePattern(
        "thread-replaced",
        "Replacing thread in the streams uncaught exception handler",
        r"stream-(?:thread|client) \[((\S+?)-" + _UUID + r"\S*)\]",
        ("member", "group"),
    ),
    LinePattern(
        "shutdown-requested",
        "Detected that shutdown was requested",
        r"stream-(?:thread|client) \[((\S+?)-" + _UUID + r"\S*)\]",
        ("member", "group"),
    ),
    # The assignor lists each node's consumers on the lines after "participating in this rebalance".
    LinePattern("participants", ": [", r"^\s*(" + _UUID + r"): \[(.*?)\]\.?\s*$", ("process", "members")),
)

# Most lines match no pattern: a line is tested against the markers only if it contains one of these
# words, which every marker contains (fewer `contains` per line of no interest than one per marker).
SCREEN = ("rebalance", "roup", "heartbeat", "generation", "probe", "uncaught", "shutdown", ": [")

for _pattern in PATTERNS:  # a pattern whose groups and fields disagree would extract the wrong values
    assert re.compile(_pattern.regex).groups == len(_pattern.fields), _pattern.kind
    assert any(word in _pattern.marker for word in SCREEN), _pattern.marker


def _kind(value: Column, patterns: Sequence[LinePattern]) -> Column:
    """The first pattern whose marker the line contains (the order of PATTERNS breaks ties)."""
    result = F.lit(None).cast("string")
    for index in reversed(range(len(patterns))):
        result = F.when(value.contains(patterns[index].marker), F.lit(index)).otherwise(result)
    return result


def _field(value: Column, pattern_index: Column, name: str) -> Column:
    cases = [
        F.when(pattern_index == index, F.regexp_extract(value, p.regex, p.fields.index(name) + 1))
        for index, p in enumerate(PATTERNS)
        if name in p.fields
    ]
    text = F.nullif(F.coalesce(*cases), F.lit(""))
    return text.cast("long") if name in NUMERIC_FIELDS else text


def _timestamp(value: Column, default_date: str) -> Column:
    date = F.regexp_replace(F.regexp_extract(value, TIMESTAMP, 1), r"[ T]$", "")
    text = F.concat(
        F.when(date == "", F.lit(default_date)).otherwise(date),
        F.lit(" "),
        F.regexp_extract(value, TIMESTAMP, 2),
        F.lit("."),
        F.regexp_extract(value, TIMESTAMP, 3),
    )
    return F.to_timestamp(text, "yyyy-MM-dd HH:mm:ss.SSS")


def with_pattern(lines: DataFrame) -> DataFrame:
    """`lines` with `pattern`: the index into PATTERNS of the line's pattern, or null."""
    value = F.col("value")
    screened = reduce(Column.__or__, [value.contains(word) for word in SCREEN])
    pattern = F.when(screened, _kind(value, PATTERNS)).cast("int")
    # The participants lines carry a broad marker: they count only when the regex holds too.
    participants = PATTERNS.index(next(p for p in PATTERNS if p.kind == "participants"))
    pattern = F.when(
        (pattern == participants) & ~value.rlike(PATTERNS[participants].regex), F.lit(None)
    ).otherwise(pattern)
    return lines.withColumn("pattern", pattern)


def with_shape(lines: DataFrame) -> DataFrame:
    """`lines` with `timestamped` (a log line) and `blank`."""
    return lines.withColumn("timestamped", F.col("value").rlike(TIMESTAMP)).withColumn(
        "blank", F.trim(F.col("value")) == ""
    )


def incidents(classified: DataFrame, default_date: str = "1970-01-01") -> DataFrame:
    """One row per recognised line: file, line, ts (null for the participants lines), kind, FIELDS, text."""
    value = F.col("value")
    index = F.col("pattern")
    kinds = F.create_map(*[item for i, p in enumerate(PATTERNS) for item in (F.lit(i), F.lit(p.kind))])
    return classified.where(index.isNotNull()).select(
        "file",
        "line",
        F.when(F.col("timestamped"), _timestamp(value, default_date)).alias("ts"),
        kinds[index].alias("kind"),
        *[_field(value, index, name).alias(name) for name in FIELDS],
        value.alias("text"),
    )


def split_tallies() -> list[Column]:
    """What `splits` counts per split of `with_shape` rows for `line_counts` (no pattern matching)."""
    return [
        F.sum(F.col("timestamped").cast("long")).alias("timestamped"),
        F.sum(F.col("blank").cast("long")).alias("blank"),
    ]


def line_counts(split_table: DataFrame, found: DataFrame) -> DataFrame:
    """Per file: lines, recognised, skipped (log lines of no interest) and unknown (neither log lines nor
    blank: another format, a stack trace, garbage), from `splits` with `split_tallies` and the incidents."""
    per_file = split_table.groupBy("file").agg(
        F.sum("rows").alias("lines"), F.sum("timestamped").alias("timestamped"), F.sum("blank").alias("blank")
    )
    recognised = found.groupBy("file").agg(
        F.count(F.lit(1)).alias("recognised"), F.sum(F.col("ts").isNull().cast("long")).alias("bare")
    )
    joined = per_file.join(recognised, "file", "left").fillna(0, ["recognised", "bare"])
    return joined.select(
        "file",
        "lines",
        "recognised",
        (F.col("timestamped") - (F.col("recognised") - F.col("bare"))).alias("skipped"),
        (F.col("lines") - F.col("timestamped") - F.col("blank") - F.col("bare")).alias("unknown"),
    )
