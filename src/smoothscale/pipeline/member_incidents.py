"""Diagnoses of what happened to one member, thread or client, from the lines that show it wherever they
were written (the member's own log, the coordinator's, the Streams client's):

- `heartbeat-expiration`: the coordinator removed a member that stopped heartbeating (session timeout);
- `poll-timeout`: a member did not call poll() within max.poll.interval.ms and left the group;
- `thread-death`: a StreamThread died of an exception and was not replaced (before KIP-671, or with the
  default handler): its tasks stop until a rebalance gives them to other threads; or its timeline shows it
  stopping while its client runs on, nothing logged around it explaining why;
- `client-shutdown`: a Streams client stopped for good (ERROR, all threads dead, SHUTDOWN_CLIENT), its
  members leaving the group;
- `fencing`: a thread or member was fenced (it missed a rebalance or a transaction timed out);
- `coordinator-loss`: members lost their group coordinator for at least `coordinator_min_s`;
- `coordinator-loop`: members that lost their coordinator and found it again within `coordinator_min_s`,
  again and again (`diagnoses` keeps the members with `coordinator_loop_min` or more losses): JoinGroup or
  heartbeats answered NOT_COORDINATOR / COORDINATOR_NOT_AVAILABLE while the coordinator moves or cannot
  serve the group;
- `sync-storm`: members whose JoinGroup/SyncGroup failed `sync_storm_min` or more rounds in a row (one
  failure per member, as when a group's members restart one after the other, is no storm);
- `assignment-store-failure`: the coordinator could not write the group's assignment (to __consumer_offsets:
  NOT_ENOUGH_REPLICAS when fewer replicas than min.insync.replicas are in sync), so every SyncGroup fails and
  the members rejoin: the coordinator's "Error ... when storing group assignment during SyncGroup", or the
  members' SyncGroup failing with COORDINATOR_NOT_AVAILABLE / NOT_COORDINATOR right after they joined;
- `commit-failed`: commits that failed because the group had rebalanced without their member (the member
  exceeded max.poll.interval.ms or was removed): their records are processed again;
- `static-member-blocked`: a static member (group.instance.id) that cannot rejoin because its previous
  incarnation, whose pod was replaced, still holds the instance id (UNRELEASED_INSTANCE_ID);
- `thread-replacement` and `shutdown-request`: the REPLACE_THREAD and SHUTDOWN_APPLICATION handlers.

Every finding carries a `key` (the member, thread, client or group it is about): findings of one kind and
key close in time are one incident (`diagnoses.deduplicate`). Expirations are keyed by group: members whose
sessions expire together (a node or a network lost) are one incident naming them all. Repeated failures
(storms, loops, store failures) are counted per member, so that each member failing once (a broker
restarting) is no loop; `incident_folding` then gathers a group's members into one incident.
"""

from __future__ import annotations

from functools import reduce

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from smoothscale.pipeline.generations import client_id
from smoothscale.pipeline.log_lines import UUID, thread_client
from smoothscale.pipeline.timeline import cite, seconds_between

FINDING_COLUMNS = ("group", "kind", "key", "ts", "end_ts", "members", "interval_s", "detail", "evidence")
POLL_TIMEOUT = r"(?i)poll timeout|expired poll timer"
COORDINATOR_TROUBLE = r"(?i)coordinator"
# A SyncGroup answered so after the JoinGroup succeeded: the coordinator could not store the assignment.
STORE_FAILED = r"(?i)coordinator is not available|not the correct coordinator"
STORING = r"(?i)when storing group assignment"
# Failed rounds of a rebalance, not the first JoinGroup's MEMBER_ID_REQUIRED (every new member gets it).
ROUND_FAILED = r"(?i)rebalanc|generation|not aware of this member|unknown member"
# A commit refused because the group went on without its member.
COMMIT_AFTER_REBALANCE = (
    r"(?i)rebalanc|not part of an active group|not aware of this member|generation|kicked out|member epoch"
)
FENCED = r"(?i)(?<!is)fenced"
"""A member fenced; not a node's description (`... rack: null isFenced: false)`, 4.x), which a JoinGroup
failure about the coordinator ("is loading the group") names."""
REJOIN_ON_COORDINATOR = (
    r"(?i)rebalance failed due to .*(?:not the correct coordinator|coordinator is not available)"
)
SESSION_EXPIRED = r"(?i)session expired"  # a KIP-848 coordinator fences a member whose session expired


def member_key(member: Column) -> Column:
    """One name per member whatever the line calls it: the client id without the consumer suffix (a
    member id, a consumer's client id and a StreamThread's name give the same key)."""
    return F.regexp_replace(client_id(member), r"-(?:restore-)?consumer$", "")


def streams_client(member: Column) -> Column:
    """The Streams client (`<app>-<process uuid>`, or its `client.id`) a thread or consumer belongs to,
    else the member."""
    found = F.regexp_extract(member, r"^(.*?-" + UUID + r")", 1)
    return F.when(found != "", found).otherwise(thread_client(member_key(member)))


def finding(
    frame: DataFrame,
    kind: str,
    key: Column,
    members: Column,
    detail: Column,
    end_ts: Column | None = None,
    interval_s: Column | None = None,
    evidence: Column | None = None,
) -> DataFrame:
    return frame.select(
        "group",
        F.lit(kind).alias("kind"),
        key.alias("key"),
        "ts",
        (end_ts if end_ts is not None else F.col("ts")).alias("end_ts"),
        members.alias("members"),
        (interval_s if interval_s is not None else F.lit(None).cast("double")).alias("interval_s"),
        detail.alias("detail"),
        (evidence if evidence is not None else F.array(cite())).alias("evidence"),
    )


def _reason_member(pattern: str) -> Column:
    return F.nullif(F.regexp_extract(F.col("reason"), pattern, 1), F.lit(""))


def expirations(incidents: DataFrame) -> DataFrame:
    """Heartbeat and poll-interval expirations, on the client's lines or in the coordinator's."""
    heartbeat_member = _reason_member(r"(?i)removing member (\S+) on heartbeat expiration")
    poll_member = _reason_member(
        r"(?i)removing member (\S+) on LeaveGroup; client reason: consumer poll timeout"
    )
    broker_start = F.col("kind") == "rebalance-start"
    left_on_poll = (F.col("kind") == "member-left") & F.coalesce(
        F.col("reason").rlike(POLL_TIMEOUT), F.lit(False)
    )
    who = F.when(broker_start, F.coalesce(heartbeat_member, poll_member)).otherwise(F.col("member"))
    kind = (
        F.when(F.col("kind").isin("heartbeat-expired", "heartbeat-failed"), "heartbeat-expiration")
        .when(
            (F.col("kind") == "member-fenced")
            & F.coalesce(F.col("reason").rlike(SESSION_EXPIRED), F.lit(False)),
            "heartbeat-expiration",
        )
        .when((F.col("kind") == "poll-timeout") | left_on_poll, "poll-timeout")
        .when(broker_start & heartbeat_member.isNotNull(), "heartbeat-expiration")
        .when(broker_start & poll_member.isNotNull(), "poll-timeout")
    )
    explained = {
        "heartbeat-expiration": "missed its heartbeats (session timeout): the coordinator removed it",
        "poll-timeout": "did not call poll within max.poll.interval.ms and left the group",
    }
    words = F.create_map(*[F.lit(x) for pair in explained.items() for x in pair])
    found = (
        incidents.withColumn("who", client_id(who))
        .withColumn("diagnosis", kind)
        .where(F.col("diagnosis").isNotNull() & F.col("who").isNotNull())
    )
    parts = []
    for name in explained:
        rows = found.where(F.col("diagnosis") == name)
        detail = F.concat_ws(" ", F.col("who"), words[F.col("diagnosis")])
        key = F.col("group") if name == "heartbeat-expiration" else member_key(F.col("who"))
        parts.append(finding(rows, name, key, F.array("who"), detail))
    return reduce(DataFrame.unionByName, parts)


def handlers(incidents: DataFrame) -> DataFrame:
    """The uncaught exception handler's REPLACE_THREAD and SHUTDOWN_APPLICATION."""
    replaced = incidents.where(F.col("kind") == "thread-replaced")
    requested = incidents.where(F.col("kind") == "shutdown-requested")
    return finding(
        replaced,
        "thread-replacement",
        member_key(F.col("member")),
        F.array("member"),
        F.concat_ws(" ", "member", F.lit("died and was replaced (REPLACE_THREAD): the group rebalances")),
    ).unionByName(
        finding(
            requested,
            "shutdown-request",
            streams_client(F.col("member")),
            F.array("member"),
            F.concat_ws(
                " ", "member", F.lit("requested an application-wide shutdown (SHUTDOWN_APPLICATION)")
            ),
        )
    )


def _is_thread(member: Column) -> Column:
    return member.rlike(r"-StreamThread-\d+$")


def _within(later: Column, earlier: Column, window_s: float) -> Column:
    return later.between(earlier, earlier + F.expr(f"INTERVAL {int(window_s)} SECONDS"))


def _client_stops(incidents: DataFrame) -> DataFrame:
    """The lines that show a Streams client stopping for good: ERROR / PENDING_ERROR, all threads dead,
    an uncaught exception handled at the client level (SHUTDOWN_CLIENT)."""
    kind, member = F.col("kind"), F.col("member")
    to_error = (
        (kind == "state-transition") & ~_is_thread(member) & F.col("new_state").isin("ERROR", "PENDING_ERROR")
    )
    client_error = (kind == "thread-error") & ~_is_thread(member)
    return incidents.where(to_error | client_error | (kind == "all-threads-died"))


def thread_deaths(incidents: DataFrame, window_s: float) -> DataFrame:
    """Threads that died of an exception and were not replaced (no REPLACE_THREAD within `window_s`), until
    their DEAD transition: `thread-death`, or part of the `client-shutdown` when their client stopped for
    good within `window_s` after."""
    replaced = F.coalesce(F.col("reason").rlike("REPLACE_THREAD"), F.lit(False))
    errors = incidents.where((F.col("kind") == "thread-error") & _is_thread(F.col("member")) & ~replaced)
    replacements = incidents.where(F.col("kind") == "thread-replaced").select(
        streams_client(F.col("member")).alias("r_client"), F.col("ts").alias("r_ts")
    )
    errors = errors.join(
        replacements,
        (streams_client(F.col("member")) == F.col("r_client"))
        & _within(F.col("r_ts"), F.col("ts"), window_s),
        "left_anti",
    )
    dead = incidents.where(
        (F.col("kind") == "state-transition") & _is_thread(F.col("member")) & (F.col("new_state") == "DEAD")
    ).select(
        F.col("member").alias("d_member"),
        F.col("ts").alias("d_ts"),
        F.col("old_state").alias("d_from"),
        cite().alias("d_cite"),
    )
    stops = _client_stops(incidents).select(
        streams_client(F.col("member")).alias("s_client"), F.col("ts").alias("s_ts")
    )
    died = (
        errors.join(
            dead,
            (F.col("member") == F.col("d_member")) & _within(F.col("d_ts"), F.col("ts"), window_s),
            "left",
        )
        .join(
            stops,
            (streams_client(F.col("member")) == F.col("s_client"))
            & _within(F.col("s_ts"), F.col("ts"), window_s),
            "left",
        )
        .groupBy("file", "line", "group", "member", "ts", "reason")
        .agg(
            F.min(F.struct("d_ts", "d_cite", "d_from")).alias("dead"),
            F.min("s_ts").alias("client_stopped"),
        )
    )
    detail = F.format_string(
        "%s died of an uncaught exception%s%s and was not replaced",
        F.col("member"),
        F.when(F.col("reason").isNotNull(), F.concat(F.lit(" ("), F.col("reason"), F.lit(")"))).otherwise(""),
        F.when(
            F.col("dead.d_ts").isNotNull(),
            F.format_string(
                ", %s to DEAD at %s", F.col("dead.d_from"), F.date_format("dead.d_ts", "HH:mm:ss.SSS")
            ),
        ).otherwise(""),
    )
    alone = F.concat(detail, F.lit(": its tasks stop until the group rebalances them to other threads"))
    evidence = F.array_compact(F.array(cite(), F.col("dead.d_cite")))
    end = F.coalesce(F.col("dead.d_ts"), F.col("ts"))
    thread = finding(
        died.where(F.col("client_stopped").isNull()),
        "thread-death",
        member_key(F.col("member")),
        F.array("member"),
        alone,
        end,
        evidence=evidence,
    )
    client = streams_client(F.col("member"))
    with_client = finding(
        died.where(F.col("client_stopped").isNotNull()),
        "client-shutdown",
        client,
        F.array(client),
        detail,
        end,
        evidence=evidence,
    )
    return thread.unionByName(with_client)


def lone_thread_stops(incidents: DataFrame, window_s: float) -> DataFrame:
    """Threads whose timeline shows them stopping (to PENDING_SHUTDOWN or DEAD) while nothing around them
    explains it: no exception, replacement or shutdown request of their client logged, no stop of the
    client itself (a clean close), within `window_s`. Whatever the exception's wording (or when its lines
    were cut from the excerpt), a thread that stops while its client runs on has died: `thread-death`."""
    kind, member = F.col("kind"), F.col("member")
    stopping = F.col("new_state").isin("PENDING_SHUTDOWN", "DEAD")
    stops = incidents.where((kind == "state-transition") & _is_thread(member) & stopping)
    client_stop = (
        (kind == "state-transition")
        & ~_is_thread(member)
        & F.col("new_state").isin("PENDING_SHUTDOWN", "NOT_RUNNING", "ERROR", "PENDING_ERROR")
    )
    explaining = incidents.where(
        kind.isin("thread-error", "thread-replaced", "shutdown-requested", "all-threads-died") | client_stop
    ).select(streams_client(member).alias("e_client"), F.col("ts").alias("e_ts"))
    near = (streams_client(member) == F.col("e_client")) & (
        F.abs(seconds_between(F.col("ts"), F.col("e_ts"))) <= window_s
    )
    lone = stops.join(explaining, near, "left_anti")
    detail = F.format_string(
        "%s stopped (%s to %s) while its client ran on: it died, and its tasks stop until the group"
        " rebalances them to other threads",
        member,
        F.col("old_state"),
        F.col("new_state"),
    )
    return finding(lone, "thread-death", member_key(member), F.array(member), detail)


def client_shutdowns(incidents: DataFrame, window_s: float) -> DataFrame:
    """Streams clients that stopped for good, with the LeaveGroup of their members just after."""
    kind, member = F.col("kind"), F.col("member")
    stops = _client_stops(incidents)
    detail = (
        F.when(
            kind == "all-threads-died",
            F.lit("all its stream threads died: it is in ERROR and processes nothing"),
        )
        .when(
            kind == "thread-error",
            F.concat(F.lit("after an uncaught exception, "), F.coalesce("reason", F.lit("it shut down"))),
        )
        .otherwise(
            F.format_string("the Streams client went from %s to %s", F.col("old_state"), F.col("new_state"))
        )
    )
    client = streams_client(member)
    stopped = finding(stops, "client-shutdown", client, F.array(client), detail)
    times = stops.select(client.alias("s_client"), F.col("ts").alias("s_ts"))
    leaves = incidents.where(kind == "leave-group")
    near = (streams_client(leaves["member"]) == times["s_client"]) & _within(
        leaves["ts"], times["s_ts"], window_s
    )
    left = leaves.join(times, near, "left_semi")
    left_detail = F.format_string(
        "%s left the group (LeaveGroup: %s): the other members rebalance without it",
        F.col("member"),
        F.coalesce(F.col("reason"), F.lit("no reason given")),
    )
    return stopped.unionByName(
        finding(
            left,
            "client-shutdown",
            streams_client(F.col("member")),
            F.array(streams_client(F.col("member"))),
            left_detail,
        )
    )


def fencing(incidents: DataFrame) -> DataFrame:
    """Threads and members fenced: Streams' TaskMigrated handling, a KIP-848 coordinator fencing a member,
    a static member's instance id taken over."""
    kind, reason = F.col("kind"), F.coalesce(F.col("reason"), F.lit(""))
    fenced_failure = kind.isin("join-failed", "sync-failed", "heartbeat-failed") & reason.rlike(FENCED)
    expired = (kind == "member-fenced") & reason.rlike(SESSION_EXPIRED)
    rows = incidents.where((kind.isin("thread-fenced", "member-fenced") & ~expired) | fenced_failure)
    detail = F.when(
        kind == "thread-fenced",
        F.concat_ws(
            " ",
            F.col("member"),
            F.lit(
                "was fenced: it missed a rebalance (or its transaction timed out) and dropped out of the"
                " group; its tasks were closed as lost and it rejoins"
            ),
        ),
    ).otherwise(F.format_string("%s was fenced: %s", F.col("member"), reason))
    return finding(rows, "fencing", member_key(F.col("member")), F.array(client_id(F.col("member"))), detail)


def coordinator_losses(incidents: DataFrame, min_seconds: float) -> DataFrame:
    """Members that lost their group coordinator, until they found it again (or the logs end)."""
    kind, reason = F.col("kind"), F.coalesce(F.col("reason"), F.lit(""))
    # A JoinGroup or SyncGroup failing on the coordinator, as the failure's own line says or as the rejoin
    # it causes gives its reason (`Request joining group due to: rebalance failed due to 'This is not the
    # correct coordinator.'`, the only trace at INFO in some versions).
    rejoin = (kind == "join-request") & reason.rlike(REJOIN_ON_COORDINATOR)
    trouble = (kind.isin("join-failed", "sync-failed") & reason.rlike(COORDINATOR_TROUBLE)) | rejoin
    # One line per loss counts towards a loop: the client's "is unavailable or invalid" (it follows a failed
    # JoinGroup, SyncGroup or heartbeat, which are lines of their own).
    lost = incidents.where(((kind == "coordinator-lost") | trouble) & F.col("ts").isNotNull()).withColumn(
        "one_per_loss", (kind == "coordinator-lost") & ~F.col("text").contains("is either not started")
    )
    found = incidents.where(kind == "coordinator-found").select(
        F.col("member").alias("f_member"), F.col("ts").alias("f_ts"), cite().alias("f_cite")
    )
    later = (lost["member"] == found["f_member"]) & (found["f_ts"] > lost["ts"])
    last_seen = incidents.groupBy(F.col("group").alias("l_group")).agg(F.max("ts").alias("last_ts"))
    outages = (
        lost.join(found, later, "left")
        .groupBy("file", "line", "group", "member", "ts", "reason", "one_per_loss")
        .agg(F.min(F.struct("f_ts", "f_cite")).alias("back"))
        .join(last_seen, F.col("group") == F.col("l_group"), "left")
    )
    until = F.coalesce(F.col("back.f_ts"), F.col("last_ts"))
    outages = outages.withColumn("outage_s", seconds_between(F.col("ts"), until))
    short = F.col("back.f_ts").isNotNull() & (F.col("outage_s") < min_seconds)
    detail = F.format_string(
        "%s lost its group coordinator (%s) and %s",
        F.col("member"),
        F.coalesce(F.col("reason"), F.lit("unavailable or invalid")),
        F.when(
            F.col("back.f_ts").isNotNull(),
            F.format_string(
                "found it again %.1f s later: no heartbeats, commits or rebalances meanwhile",
                F.col("outage_s"),
            ),
        ).otherwise(
            F.format_string("had not found it again %.1f s later, when the logs end", F.col("outage_s"))
        ),
    )
    evidence = F.array_compact(F.array(cite(), F.col("back.f_cite")))
    members = F.array(client_id(F.col("member")))
    return finding(
        outages.where(~short),
        "coordinator-loss",
        F.col("group"),
        members,
        detail,
        until,
        F.col("outage_s"),
        evidence,
    ).unionByName(
        finding(
            outages.where(short & F.col("one_per_loss")),
            "coordinator-loop",
            member_key(F.col("member")),
            members,
            F.format_string(
                "%s lost its group coordinator (%s)", F.col("member"), F.coalesce("reason", F.lit("?"))
            ),
            until,
            F.col("outage_s"),
            evidence,
        )
    )


def _reason_matches(pattern: str) -> Column:
    return F.coalesce(F.col("reason").rlike(pattern), F.lit(False))


def sync_failures(incidents: DataFrame) -> DataFrame:
    """Every failed round of a group's rebalance (a SyncGroup failure, or 2.5's and 2.6's "Join group failed
    with" a rebalance error), as `sync-storm` findings; `diagnoses` keeps the incidents that gathered
    `sync_storm_min` of them. SyncGroup failures on the coordinator's side are `assignment_store_failures`."""
    kind = F.col("kind")
    round_failed = (kind == "rebalance-failed") & _reason_matches(ROUND_FAILED)
    failed = incidents.where(
        (((kind == "sync-failed") & ~_reason_matches(STORE_FAILED)) | round_failed) & F.col("ts").isNotNull()
    )
    detail = F.concat(
        F.when(kind == "sync-failed", F.lit("SyncGroup failed: ")).otherwise(F.lit("rebalance failed: ")),
        F.coalesce(F.col("reason"), F.lit("no reason given")),
    )
    member = client_id(F.col("member"))
    return finding(failed, "sync-storm", member_key(F.col("member")), F.array(member), detail)


def assignment_store_failures(incidents: DataFrame) -> DataFrame:
    """The coordinator failing to store a group's assignment: its own reason for the next rebalance, or a
    member's SyncGroup failing with a coordinator error (the JoinGroup before it succeeded)."""
    kind = F.col("kind")
    broker = (kind == "rebalance-start") & _reason_matches(STORING)
    client = (kind == "sync-failed") & _reason_matches(STORE_FAILED)
    rows = incidents.where((broker | client) & F.col("ts").isNotNull())
    who = F.when(broker, _reason_member(r"\(member: ([^)\s]+)\)")).otherwise(F.col("member"))
    detail = F.when(broker, F.concat(F.lit("the coordinator: "), F.col("reason"))).otherwise(
        F.concat(F.lit("SyncGroup failed: "), F.col("reason"))
    )
    return finding(
        rows, "assignment-store-failure", member_key(who), F.array_compact(F.array(client_id(who))), detail
    )


def commit_failures(incidents: DataFrame) -> DataFrame:
    """Commits refused because the group had rebalanced without their member, one finding per line (the
    group's commits close in time are one incident: many threads failing after one rebalance)."""
    rows = incidents.where((F.col("kind") == "commit-failed") & _reason_matches(COMMIT_AFTER_REBALANCE))
    members = F.array_compact(F.array(client_id(F.col("member"))))
    return finding(rows, "commit-failed", F.col("group"), members, F.col("reason"))


def static_members_blocked(incidents: DataFrame) -> DataFrame:
    """A static member whose instance id is still held by the member it replaces (KIP-848's
    UNRELEASED_INSTANCE_ID), named by its instance id, with the member holding it."""
    rows = incidents.where((F.col("kind") == "instance-unreleased") & F.col("ts").isNotNull())
    detail = F.format_string(
        "the static member %s (group.instance.id) could not join: its instance id is still held by member %s,"
        " whose pod was replaced without leaving the group, until that member's session expires",
        F.col("instance"),
        F.col("members"),
    )
    members = F.array_compact(F.array(F.col("instance"), F.col("members")))
    return finding(rows, "static-member-blocked", F.col("instance"), members, detail)


def member_findings(incidents: DataFrame, window_s: float, coordinator_min_s: float) -> DataFrame:
    parts = [
        expirations(incidents),
        handlers(incidents),
        thread_deaths(incidents, window_s),
        lone_thread_stops(incidents, window_s),
        client_shutdowns(incidents, window_s),
        fencing(incidents),
        coordinator_losses(incidents, coordinator_min_s),
        sync_failures(incidents),
        assignment_store_failures(incidents),
        commit_failures(incidents),
        static_members_blocked(incidents),
    ]
    return reduce(DataFrame.unionByName, parts)
