"""The Kafka broker, consumer, Connect and Kafka Streams log lines that tell a rebalance's story, from
Kafka 1.x to 4.x, and their parsing into one DataFrame of incidents.

Each `LinePattern` pairs a literal marker (a cheap `contains` test) with the regular expression that
extracts the fields from the message (`log_layouts.message`: the line without its layout, container prefix
or trailing logger name). A line is recognised by the first pattern whose marker it contains and whose
expression matches its message; both run on the JVM. Lines that match no pattern are counted, never
fatal: log lines of no interest are `skipped`, stack traces and other continuation lines of multi-line
records are `continuation`, the rest `unknown`; and lines that speak of rebalances but match no pattern
are kept as `unrecognised`, so that the report can say what it could not read.

The wordings come from the clients' and coordinators' sources of each era: the ZooKeeper-era broker
(`[GroupCoordinator 1]: Preparing to rebalance group X in state PreparingRebalance with old generation 10
(__consumer_offsets-7) (reason: ...)`, and before 2.4 without state and reason), the KRaft group
coordinator (`[GroupCoordinator id=1 topic=__consumer_offsets partition=7] ... (reason: ...).`, KIP-848
consumer groups' `[GroupId X] Member M joins the consumer group using the consumer protocol.`), the
consumer's `[Consumer clientId=C, groupId=G]` prefix (`[Consumer instanceId=I, clientId=C, groupId=G]` for
static members, `[Worker clientId=C, groupId=G]` in Connect workers), and Kafka Streams'
`stream-thread [<app>-<process uuid>-StreamThread-<n>(-consumer)]` and `stream-client [<app>-<uuid>]`:
the app (= consumer group) and the process are taken from those names.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from functools import reduce

from pyspark.sql import Column, DataFrame, Window
from pyspark.sql import functions as F

from smoothscale.pipeline import log_layouts

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
    "leader",
    "old_state",
    "new_state",
    "instance",
)
NUMERIC_FIELDS = frozenset({"generation", "nodes", "consumers", "scheduled_ms"})
UNRECOGNISED = "unrecognised"

UUID = log_layouts.UUID
# A consumer's log prefix: plain, static member (instanceId) or Connect worker. Groups: member, group.
_CLIENT = r"\[(?:Consumer|Worker)(?: instanceId=[^,\]]+,)? clientId=([^,\]]+), groupId=([^,\]]+)\]"
# A Streams client is named `<app>-<process uuid>`, or by its `client.id` when one is set (smoothscale's
# bridge sets the pod name): then the name carries no group, and `incidents` takes it from the lines its
# consumers wrote with their groupId.
# A Streams thread (or its consumer). Groups: member, group.
_THREAD = r"stream-thread \[((?:(\S+?)-" + UUID + r"|\S+?)-StreamThread-\d+(?:-consumer)?)\]"
# A Streams thread or client. Groups: member, group.
_STREAMS = (
    r"stream-(?:thread|client) \[((?:(\S+?)-" + UUID + r"|[^\s\]]+?)(?:-StreamThread-\d+(?:-consumer)?)?)\]"
)
# The leader's thread in the assignor's lines. Groups: member, group, process.
_LEADER = r"stream-thread \[((?:(\S+?)-(" + UUID + r")|\S+?)-StreamThread-\d+-consumer)\]"
# The broker names a member `M` or, from 2.3 to 3.x, `[group.instance.id I, member.id M]`. Group: member.
_BROKER_MEMBER = r"Member(?:\[group\.instance\.id [^,]*, member\.id | )([^\s\]]+)\]?"
# When a probing rebalance is due: epoch ms before 4.0, then Kafka's log date (`Utils.toLogDateTimeFormat`:
# `2026-11-25 16:38:04,430 Z`, the JVM's zone as `Z` or `+01:00`). Group: the time.
_DUE = r"(\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2},\d{3} (?:Z|[+-]\d{2}:\d{2})|\d+)"


@dataclass(frozen=True, slots=True)
class LinePattern:
    kind: str
    marker: str  # a literal every matching line contains
    regex: str  # Java- and Python-compatible, searched in the message; its groups fill `fields` in order
    fields: tuple[str, ...]


PATTERNS: tuple[LinePattern, ...] = (
    # -- the group coordinator (broker) ------------------------------------------------------------------
    LinePattern(
        "rebalance-start",
        "Preparing to rebalance group",
        r"Preparing to rebalance group (\S+)(?: in state \w+)? with old generation (-?\d+)"
        r"(?: \(__consumer_offsets-\d+\))?(?: \(reason: (.*)\))?\.?\s*$",
        ("group", "generation", "reason"),
    ),
    LinePattern(
        "rebalance-stabilized",
        "Stabilized group",
        r"Stabilized group (\S+) generation (\d+)(?: \(__consumer_offsets-\d+\))?(?: with (\d+) members)?",
        ("group", "generation", "consumers"),
    ),
    LinePattern(
        "assignment-received",
        "Assignment received from leader",
        r"Assignment received from leader ?(\S*) for group (\S+) for generation (\d+)"
        r"(?:\. The group has (\d+) members)?",
        ("leader", "group", "generation", "consumers"),
    ),
    LinePattern(
        "group-empty",
        "is now empty",
        r"Group (\S+) with generation (\d+) is now empty",
        ("group", "generation"),
    ),
    LinePattern(
        "heartbeat-expired",
        "has failed, removing it from the group",
        _BROKER_MEMBER + r" in group (\S+) has failed, removing it from the group",
        ("member", "group"),
    ),
    LinePattern(
        "heartbeat-expired",  # the same, as pasted with the group's name redacted or run into `group`
        "has failed, removing it from the group",
        r"[Mm]ember (\S+) in group ?(\S+?) has failed, removing it from the group",
        ("member", "group"),
    ),
    LinePattern(
        "heartbeat-expired",
        "has been removed after session timeout expiration",
        r"Pending member (\S+) in group (\S+) has been removed after session timeout expiration",
        ("member", "group"),
    ),
    LinePattern(
        "member-left",
        "has left, removing it from the group",
        _BROKER_MEMBER + r" in group (\S+) has left, removing it from the group",
        ("member", "group"),
    ),
    LinePattern(
        "member-left",
        "has left group through explicit",
        r"\[Group(?:Id)? (\S+)\] (?:Dynamic |Static |Pending )?[Mm]ember (\S+) has left group through"
        r" explicit .LeaveGroup. request(?:; client reason: (.*?))?\.?\s*$",
        ("group", "member", "reason"),
    ),
    LinePattern(
        "member-left",
        "left the consumer group",
        r"\[GroupId (\S+)\] Member (\S+) left the consumer group",
        ("group", "member"),
    ),
    LinePattern(
        "member-joined",
        "joins the consumer group using the",
        r"\[GroupId (\S+)\] (?:Static )?[Mm]ember (\S+)(?: with instance id \S+)? joins the consumer group",
        ("group", "member"),
    ),
    LinePattern(
        "member-fenced",
        "fenced from the group because",
        r"\[GroupId (\S+)\] (?:Streams )?[Mm]ember (\S+) fenced from the group because (.*?)\.?\s*$",
        ("group", "member", "reason"),
    ),
    LinePattern(
        "member-epoch",  # a KIP-848 member's epoch and state as the coordinator records them
        "new assignment state: epoch=",
        r"\[GroupId (\S+)\] Member (\S+) new assignment state: epoch=(-?\d+), previousEpoch=-?\d+,"
        r" state=(\w+)",
        ("group", "member", "generation", "new_state"),
    ),
    # -- the consumer (and Connect worker) ---------------------------------------------------------------
    LinePattern(
        "poll-timeout",
        "oll timeout has expired",
        _CLIENT + r".*?([Cc]onsumer poll timeout has expired)",
        ("member", "group", "reason"),
    ),
    LinePattern(
        "poll-timeout",
        "heartbeat to leave due to expired poll timer",
        _CLIENT + r".*?heartbeat to leave due to (expired poll timer)",
        ("member", "group", "reason"),
    ),
    LinePattern(
        "poll-timeout",  # the member's own line, quoted without the consumer's prefix
        "oll timeout has expired",
        r"(?:^|\s)Member (\S+) sending LeaveGroup request to coordinator .*? due to ([Cc]onsumer poll timeout"
        r" has expired)",
        ("member", "reason"),
    ),
    LinePattern(
        "leave-group",
        "sending LeaveGroup request to coordinator",
        _CLIENT + r".*?sending LeaveGroup request to coordinator.*? due to (.*?)\.?\s*$",
        ("member", "group", "reason"),
    ),
    LinePattern(
        "leave-group",
        "generated the heartbeat to leave the group",
        _CLIENT + r".*?generated the heartbeat to leave the group",
        ("member", "group"),
    ),
    LinePattern(
        "sync-failed",
        "SyncGroup failed",
        _CLIENT
        + r".*?SyncGroup failed:? (.*?)(?: Sent generation was Generation\{generationId=(-?\d+).*)?\s*$",
        ("member", "group", "reason", "generation"),
    ),
    LinePattern(
        "join-failed",
        "JoinGroup failed",
        _CLIENT + r".*?JoinGroup failed(?::| due to)? (.*?)(?: Sent generation was .*)?\s*$",
        ("member", "group", "reason"),
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
        _CLIENT + r".*?Attempt to heartbeat with .*?generationId=(-?\d+).*? failed due to (.*?),"
        r" resetting generation",
        ("member", "group", "generation", "reason"),
    ),
    LinePattern(
        "heartbeat-rebalancing",
        "heartbeat failed since group is rebalancing",
        _CLIENT + r".*?Attempt to heartbeat failed since group is rebalancing",
        ("member", "group"),
    ),
    LinePattern(
        "coordinator-lost",
        "is unavailable or invalid",
        _CLIENT + r".*?Group coordinator .*? is unavailable or invalid(?: due to cause: (.*?)\."
        r"(?: isDisconnected: \w+\.)? Rediscovery|, will attempt rediscovery)",
        ("member", "group", "reason"),
    ),
    LinePattern(
        "coordinator-lost",
        "Marking the coordinator",
        _CLIENT + r".*?Marking the coordinator .*? dead",
        ("member", "group"),
    ),
    LinePattern(
        "coordinator-found",
        "Discovered group coordinator",
        _CLIENT + r".*?Discovered group coordinator",
        ("member", "group"),
    ),
    # Before 2.0 the coordinator's lines named the group at their end, not the client: the consumer is
    # named by its group (one per file, as these logs are an application's own).
    LinePattern(
        "coordinator-lost",
        "dead for group",
        r"Marking the coordinator .*? dead for group ((\S+?))\.?\s*$",
        ("member", "group"),
    ),
    LinePattern(
        "coordinator-found",
        "Discovered coordinator",
        r"Discovered coordinator .*? for group ((\S+?))\.?\s*$",
        ("member", "group"),
    ),
    LinePattern(
        "generation-reset",
        "Resetting generation",
        _CLIENT + r".*?Resetting generation (?:and member id )?(?:\S+ )?due to:? (.*?)\s*$",
        ("member", "group", "reason"),
    ),
    LinePattern(
        "partitions-lost",  # 2.4+: before rejoining, a member whose generation was reset drops its partitions
        "Giving away all assigned partitions as lost",
        _CLIENT + r".*?Giving away all assigned partitions as lost since (.*?)\s*$",
        ("member", "group", "reason"),
    ),
    LinePattern(
        "rebalance-failed",
        "Rebalance failed",
        _CLIENT + r".*?Rebalance failed\.?\s*$",
        ("member", "group"),
    ),
    LinePattern(
        "rebalance-failed",  # 2.5 and 2.6 log each failed join or sync with the exception
        "Join group failed with",
        _CLIENT + r".*?Join group failed with (.*?)\s*$",
        ("member", "group", "reason"),
    ),
    LinePattern(
        "coordinator-lost",  # before 2.8 a failed JoinGroup or SyncGroup is DEBUG: the heartbeat says it
        "is either not started or not valid",
        _CLIENT + r".*?Attempt to heartbeat failed since coordinator .*? is either not started or not valid",
        ("member", "group"),
    ),
    # A commit that failed: the consumer's own lines (the error per partition, the response, auto-commits)
    # and the CommitFailedException an application logs (no member named: its group is the file's).
    LinePattern(
        "commit-failed",
        "Offset commit failed on partition",
        _CLIENT + r".*?Offset commit failed on partition \S+ at offset \d+: (.*?)\s*$",
        ("member", "group", "reason"),
    ),
    LinePattern(
        "commit-failed",
        "OffsetCommit failed with",
        _CLIENT + r".*?OffsetCommit failed with (?:Generation\{generationId=(-?\d+)[^}]*\}|\S+)"
        r"(?::| due to) (.*?)\s*$",
        ("member", "group", "generation", "reason"),
    ),
    LinePattern(
        "commit-failed",
        "auto-commit of offsets",
        _CLIENT + r".*?(?:Synchronous|Asynchronous) auto-commit of offsets(?: .*?)? failed: (.*?)\s*$",
        ("member", "group", "reason"),
    ),
    LinePattern(
        "commit-failed",
        "Failing OffsetCommit request since the consumer is not part of an active group",
        _CLIENT + r".*?Failing OffsetCommit request since (the consumer is not part of an active group)",
        ("member", "group", "reason"),
    ),
    LinePattern(
        "commit-failed",
        "CommitFailedException",
        r"CommitFailedException: ((?:Offset c|C)ommit cannot be completed since the (?:group|consumer)"
        r" .*?)\s*$",
        ("reason",),
    ),
    # KIP-848 (3.7+): a static member's new incarnation cannot join while the old one holds its instance id.
    LinePattern(
        "instance-unreleased",
        "failed due to unreleased instance id",
        _CLIENT
        + r".*?HeartbeatRequest failed due to unreleased instance id (\S+?): .*?owned by (\S+) member",
        ("member", "group", "instance", "members"),
    ),
    LinePattern(
        "instance-unreleased",  # 3.7's wording
        "was not released",
        _CLIENT + r".*?HeartbeatRequest failed due to the instance id (\S+) was not released:"
        r" .*?owned by (\S+) member",
        ("member", "group", "instance", "members"),
    ),
    LinePattern(
        "instance-unreleased",  # the coordinator's side (3.7+; "is is owned" as written)
        "cannot join the group because the instance id is",
        r"\[GroupId (\S+)\] Static member (\S+) with instance id (\S+) cannot join the group because the"
        r" instance id is(?: is)? owned by member (\S+?)\.?\s*$",
        ("group", "member", "instance", "members"),
    ),
    LinePattern(
        "rebalance-started",  # a Connect worker
        "Rebalance started",
        _CLIENT + r".*?Rebalance started",
        ("member", "group"),
    ),
    LinePattern(
        "join-request",
        "Request joining group due to",
        _CLIENT + r".*?Request joining group due to:? (.*?)\s*$",
        ("member", "group", "reason"),
    ),
    LinePattern(
        "rejoining",
        "(Re-)joining group",
        _CLIENT + r".*?\(Re-\)joining group",
        ("member", "group"),
    ),
    LinePattern(
        "joined",
        "joined group with generation",
        _CLIENT + r".*?Successfully joined group with generation (?:Generation\{generationId=)?(-?\d+)",
        ("member", "group", "generation"),
    ),
    LinePattern(
        "joined",
        "Joined group at generation",
        _CLIENT + r".*?Joined group at generation (\d+)(?:.*?leader='([^']*)')?",
        ("member", "group", "generation", "leader"),
    ),
    LinePattern(
        "synced",
        "synced group in generation",
        _CLIENT + r".*?Successfully synced group in generation (?:Generation\{generationId=)?(-?\d+)",
        ("member", "group", "generation"),
    ),
    LinePattern(
        "assignment-finished",
        "Finished assignment for group at generation",
        _CLIENT + r".*?Finished assignment for group at generation (\d+): \{(.*)\}",
        ("member", "group", "generation", "members"),
    ),
    # The new consumer protocol (KIP-848, `group.protocol=consumer`, Kafka 3.7+): the member's state machine
    # (AbstractMembershipManager, INFO since 3.8), its epoch the group epoch it has reconciled so far.
    LinePattern(
        "member-state",
        "transitioned from",
        _CLIENT + r".*?Member \S+.*? with epoch (-?\d+) transitioned from (\w+) to (\w+)",
        ("member", "group", "generation", "old_state", "new_state"),
    ),
    # -- Kafka Streams -------------------------------------------------------------------------------------
    LinePattern(
        "participating",
        "All members participating in this rebalance",
        r"(?s)" + _LEADER + r" All members participating in this rebalance: ?(.*)",
        ("member", "group", "process", "members"),
    ),
    LinePattern(
        "participating",
        "participating in this rebalance",
        r"(?s)" + _LEADER + r" (\d+) client nodes and (\d+) consumers participating in this rebalance: ?(.*)",
        ("member", "group", "process", "nodes", "consumers", "members"),
    ),
    LinePattern(
        "followup-scheduled",
        "Requesting followup rebalance be scheduled immediately",
        _LEADER + r" Requesting followup rebalance be scheduled immediately (?:by \S+ )?due to (.*?)\.?\s*$",
        ("member", "group", "process", "reason"),
    ),
    LinePattern(
        "probing-scheduled",
        "to probe for caught-up replica tasks",
        _LEADER
        + r" Requesting followup rebalance be scheduled (?:by \S+ )?for "
        + _DUE
        + r"(?: ms)? to probe",
        ("member", "group", "process", "scheduled_ms"),
    ),
    LinePattern(
        "probing-scheduled",
        "Requested to schedule next probing rebalance at",
        _THREAD + r".*?Requested to schedule next probing rebalance at " + _DUE,
        ("member", "group", "scheduled_ms"),
    ),
    # Before 3.4 the assignor wrote the probing rebalance's epoch time followed by "ms".
    LinePattern(
        "probing-scheduled",
        "Requested to schedule probing rebalance for",
        _THREAD + r".*?Requested to schedule probing rebalance for (\d+) ms",
        ("member", "group", "scheduled_ms"),
    ),
    LinePattern(
        "stable-assignment",
        "Finished stable assignment of tasks",
        _THREAD + r" Finished stable assignment of tasks, no followup rebalances required",
        ("member", "group"),
    ),
    LinePattern(
        "followup-triggered",
        "Triggering the followup rebalance scheduled for",
        _THREAD + r".*?Triggering the followup rebalance scheduled for " + _DUE,
        ("member", "group", "scheduled_ms"),
    ),
    LinePattern(
        "thread-replaced",
        "Replacing thread in the streams uncaught exception handler",
        _STREAMS,
        ("member", "group"),
    ),
    LinePattern(
        "shutdown-requested",
        "Detected that shutdown was requested",
        _STREAMS,
        ("member", "group"),
    ),
    LinePattern(
        "thread-error",
        "Encountered the following exception during processing",
        _STREAMS + r" ?Encountered the following exception during processing(?: and ([^.:]*))?",
        ("member", "group", "reason"),
    ),
    LinePattern(
        "thread-error",  # ksqlDB's query runner
        "Unhandled exception caught in streams thread",
        r"Unhandled exception caught in streams thread ((\S+?)-" + UUID + r"-StreamThread-\d+)",
        ("member", "group"),
    ),
    LinePattern(
        "all-threads-died",
        "All stream threads have died",
        _STREAMS,
        ("member", "group"),
    ),
    LinePattern(
        "thread-fenced",
        "Detected that the thread is being fenced",
        _STREAMS + r".*?missed a rebalance",
        ("member", "group"),
    ),
    LinePattern(
        "thread-fenced",  # before 2.8: committing (processing, ...) a task that another thread now owns
        "since it got migrated to another thread already",
        _STREAMS + r".*?since it got migrated to another thread already.*?rebalance",
        ("member", "group"),
    ),
    LinePattern(
        "thread-fenced",  # before 2.6: a task migrated while the thread was out of the group
        "that got migrated to another thread",
        _STREAMS + r".*?missed a rebalance",
        ("member", "group"),
    ),
    LinePattern(
        "state-transition",
        "State transition from",
        _STREAMS + r" ?State transition from (\w+) to (\w+)",
        ("member", "group", "old_state", "new_state"),
    ),
    # The assignor lists each node's consumers on the lines after "participating in this rebalance".
    LinePattern("participants", ": [", r"^\s*(" + UUID + r"): \[(.*?)\]", ("process", "members")),
)

# Most lines match no pattern: a line is tested against the markers only if it contains one of these
# words. Each word costs a pass over every line's bytes, so they are few: every line a pattern matches
# contains one, in its marker or in what its expression requires (a consumer's prefix names its `groupId`,
# a coordinator's line its group, Streams' fencing lines say the thread "missed a rebalance").
SCREEN = ("roup", "balance", "exception", "shutdown", "have died", "State transition", ": [", " PM ", " AM ")
# A screened line no pattern recognised that still speaks of group membership: counted as unrecognised.
RELATED = (
    r"(?i)rebalance (?:failed|in progress|timed out)|generation|join(?:ing|ed)? ?group|leavegroup"
    r"|attempt to heartbeat|heartbeat expiration|group coordinator|state transition|stream threads have died"
    r"|fenced (?:by|from)|is being fenced|participating in this rebalance"
)
# A transactional producer finds its group's coordinator to commit offsets: no group membership.
UNRELATED = "[Producer clientId="

for _pattern in PATTERNS:  # a pattern whose groups and fields disagree would extract the wrong values
    assert re.compile(_pattern.regex).groups == len(_pattern.fields), _pattern.kind
    assert set(_pattern.fields) <= set(FIELDS), _pattern.kind
    assert any(word in _pattern.marker or word in _pattern.regex for word in SCREEN), _pattern.marker


def _sql_string(text: str) -> str:
    """`text` as a Spark SQL raw string literal (no escapes are read in it)."""
    for quote in ("'", '"'):
        if quote not in text:
            return f"r{quote}{text}{quote}"
    raise ValueError(f"no quote free for a SQL literal: {text}")


def _sql_value(value: object) -> str:
    if value is None:
        return "NULL"
    return _sql_string(value) if isinstance(value, str) else str(value)


def _of_pattern(index: str, values: Sequence[object]) -> str:
    """SQL for `values[index]`, per row (one expression whatever the number of patterns: the generated code
    stays small, and the regular expressions a row needs are compiled once and cached by Spark). Built as
    SQL text, so that the JVM parses it in one call instead of a call per literal."""
    items = ", ".join(
        "NULL" if v is None else _sql_string(v) if isinstance(v, str) else str(v) for v in values
    )
    return f"CASE WHEN {index} >= 0 THEN element_at(array({items}), {index} + 1) END"


def _epoch_ms(due: Column) -> Column:
    """A `_DUE` time as epoch milliseconds."""
    iso = F.regexp_replace(F.regexp_replace(due, ",", "."), r" (Z|[+-]\d{2}:\d{2})$", "$1")
    return F.when(due.rlike(r"^\d+$"), due.cast("long")).otherwise(F.unix_millis(iso.cast("timestamp")))


def _field(index: str, name: str) -> Column:
    """The field `name` of the line's pattern, from its message (column `message`)."""
    group = _of_pattern(index, [p.fields.index(name) + 1 if name in p.fields else None for p in PATTERNS])
    regex = _of_pattern(index, [p.regex for p in PATTERNS])
    extracted = F.expr(f"nullif(regexp_extract(message, {regex}, {group}), '')")
    if name == "scheduled_ms":
        return _epoch_ms(extracted)
    return extracted.cast("long") if name in NUMERIC_FIELDS else extracted


def screened(value: Column) -> Column:
    """True for a line that contains a SCREEN word: the only lines a pattern can recognise."""
    return reduce(Column.__or__, [value.contains(word) for word in SCREEN])


def _first_match() -> Column:
    """The index of the first pattern whose marker the line contains and whose expression matches its
    message (columns `value`, `message`), else null: one SQL expression, each regular expression tried only
    on the lines that contain its marker."""
    cases = " ".join(
        f"WHEN contains(value, {_sql_string(p.marker)}) AND message RLIKE {_sql_string(p.regex)} THEN {i}"
        for i, p in enumerate(PATTERNS)
    )
    return F.expr(f"CASE {cases} END")


def with_pattern(lines: DataFrame) -> DataFrame:
    """`lines` with `message` (`log_layouts.message`) and `pattern`: the index into PATTERNS of the first
    pattern whose marker the line contains and whose expression matches the message, -1 for an unrecognised
    line about rebalances, or null."""
    value = F.col("value")
    on_screen = screened(value)
    # Only log lines count as unrecognised: a stack frame naming a FencedInstanceIdException is not one.
    log_line = value.rlike(log_layouts.LOG_LINE)
    related = on_screen & value.rlike(RELATED) & ~value.contains(UNRELATED) & log_line
    with_message = lines.withColumn("message", log_layouts.message(value))
    pattern = F.when(on_screen, _first_match())
    return with_message.withColumn("pattern", F.coalesce(pattern, F.when(related, F.lit(-1))).cast("int"))


def with_shape(lines: DataFrame) -> DataFrame:
    """`lines` with `timestamped` (a log line), `blank` and `continuation` (see `log_layouts.shape`)."""
    for name, column in log_layouts.shape(F.col("value")).items():
        lines = lines.withColumn(name, column)
    return lines


def incidents(classified: DataFrame, default_date: str = "1970-01-01") -> DataFrame:
    """One row per line of interest: file, line, ts (null for lines without a stamp, such as the
    participants lines), kind (UNRECOGNISED for lines about rebalances no pattern read), FIELDS, text, and
    the line's shape (`timestamped`, `continuation`) for the counts. A line without a stamp of its own
    takes its record's (`record_time`)."""
    value = F.col("value")
    index = F.col("pattern")
    kinds = _of_pattern("pattern", [p.kind for p in PATTERNS])
    stamped = F.when(F.col("timestamped"), log_layouts.timestamp(value, default_date))
    found = (
        record_time(classified)
        .where(index.isNotNull())
        .select(
            "file",
            "line",
            F.coalesce(stamped, F.col("record_ts")).alias("ts"),
            F.coalesce(F.expr(kinds), F.lit(UNRECOGNISED)).alias("kind"),
            *[_field("pattern", name).alias(name) for name in FIELDS],
            value.alias("text"),
            "timestamped",
            "continuation",
        )
    )
    return _stamped_from_record(found.withColumn("group", _group_of_client(F.col("member"), F.col("group"))))


def record_time(kept: DataFrame) -> DataFrame:
    """`kept` (screened lines, with `pattern`) with `record_ts`: for a line right after a java.util.logging
    header line (`Jul 17, 2026 1:50:29 PM <class> <method>`, then `INFO: <message>`), the header's time.
    Header lines pass the screen (`SCREEN`) for this only; they are no incidents."""
    header = log_layouts.jul_header_time(F.col("value"))
    previous = Window.partitionBy("file").orderBy("line")
    before = F.lag(F.struct(F.col("line").alias("at"), header.alias("ts"))).over(previous)
    return kept.withColumn("record_ts", F.when(before["at"] == F.col("line") - 1, before["ts"]))


# How far (in lines) a recognised line without a stamp of its own (an exception an application logged with
# its stack trace) may sit after the recognised log line that gives it its time.
RECORD_LINES = 20


def _stamped_from_record(found: DataFrame) -> DataFrame:
    """A commit failure logged as an exception (a continuation line, no stamp, no member) takes the time of
    the recognised log line just before it in its file, and the file's group when the file names only one."""
    before = Window.partitionBy("file").orderBy("line").rowsBetween(Window.unboundedPreceding, -1)
    stamped = F.when(F.col("ts").isNotNull(), F.struct(F.col("line").alias("at"), "ts"))
    previous = F.last(stamped, ignorenulls=True).over(before)
    groups = F.collect_set("group").over(Window.partitionBy("file"))
    orphan = F.col("ts").isNull() & (F.col("kind") == "commit-failed")
    near = previous.isNotNull() & (F.col("line") - previous["at"] <= RECORD_LINES)
    return found.select(
        *[c for c in found.columns if c not in ("ts", "group")],
        F.when(orphan & near, previous["ts"]).otherwise(F.col("ts")).alias("ts"),
        F.when(orphan & F.col("group").isNull() & (F.size(groups) == 1), groups[0])
        .otherwise(F.col("group"))
        .alias("group"),
    )


def thread_client(name: Column) -> Column:
    """The client a StreamThread (or its consumer's client id) belongs to: its name without the thread's
    suffix (`<pod>-StreamThread-1-consumer` -> `<pod>`); other names unchanged."""
    return F.regexp_replace(name, r"-StreamThread-\d+(?:-consumer)?$", "")


def _group_of_client(member: Column, group: Column) -> Column:
    """`group`, or for a line whose member names no group (a Streams thread or client with its own
    `client.id`), the group its client's consumers named in the same file: `<pod>-StreamThread-1` and
    `[Consumer clientId=<pod>-StreamThread-1-consumer, groupId=<app>]` share the client `<pod>`."""
    seen = F.first(group, ignorenulls=True).over(Window.partitionBy("file", thread_client(member)))
    return F.coalesce(group, F.when(member.isNotNull(), seen))


def split_tallies() -> list[Column]:
    """What `splits` counts per split of `with_shape` rows for `line_counts` (no pattern matching)."""
    return [F.sum(F.col(name).cast("long")).alias(name) for name in ("timestamped", "blank", "continuation")]


def line_counts(split_table: DataFrame, found: DataFrame) -> DataFrame:
    """Per file: lines, timestamped (log lines), recognised, unrecognised (about rebalances, no pattern),
    skipped (log lines of no interest), continuation (stack traces and other lines of multi-line records),
    blank, unknown (none of these: another format, garbage) and `readable`, the share of the lines whose
    layout was understood."""
    per_file = split_table.groupBy("file").agg(
        F.sum("rows").alias("lines"), *[F.sum(c).alias(c) for c in ("timestamped", "blank", "continuation")]
    )
    recognised = F.col("kind") != UNRECOGNISED
    # The assignor's participants lines continue its record without a stamp of their own; any other
    # recognised line without a stamp is in a layout the parser does not read (it stays unknown).
    bare = ~F.col("timestamped") & ~F.col("continuation") & (F.col("kind") == "participants")
    counted = found.groupBy("file").agg(
        F.sum(recognised.cast("long")).alias("recognised"),
        F.sum((~recognised).cast("long")).alias("unrecognised"),
        F.sum(F.col("timestamped").cast("long")).alias("stamped_of_interest"),
        F.sum((recognised & bare).cast("long")).alias("bare_recognised"),
    )
    counts = ["recognised", "unrecognised", "stamped_of_interest", "bare_recognised"]
    joined = per_file.join(counted, "file", "left").fillna(0, counts)
    unknown = (
        F.col("lines")
        - F.col("timestamped")
        - F.col("blank")
        - F.col("continuation")
        - F.col("bare_recognised")
    )
    return joined.select(
        "file",
        "lines",
        "timestamped",
        "recognised",
        "unrecognised",
        (F.col("timestamped") - F.col("stamped_of_interest")).alias("skipped"),
        "continuation",
        "blank",
        unknown.alias("unknown"),
        F.round((F.col("lines") - unknown) / F.greatest(F.col("lines"), F.lit(1)), 3).alias("readable"),
    )
