"""Where a log line's time and message are, in the layouts real deployments write, as Spark columns.

A Kafka line's message (what the patterns of `log_lines` read) sits inside a layout that differs from one
deployment to the next:
- log4j / log4j2 as Kafka ships it: `[2026-11-21 11:08:54,694] INFO <message> (logger.Name)`;
- log4j's and logback's ISO dates, with `T`, `,` or `.` and an optional zone (`Z`, `+01:00`, `+0100`):
  `2026-11-21 11:08:54,694 INFO [thread] logger - <message>`, `2026-11-21T11:08:54.694Z ...`;
- Spring Boot: `2021-08-04 13:55:20.709 ERROR 8564 --- [thread] logger : <message>`;
- logback's default time-only stamp `16:24:27.004 [thread] WARN logger - <message>` (the date comes from
  `--log-date`), and the rebalancing guide's `[11:08:54,694]`;
- JSON layouts (logstash-logback-encoder, ECS, log4j2's JsonTemplateLayout): the message in `message`,
  the time in `@timestamp`, `timestamp` or `time` (ISO) or `timeMillis` (epoch ms);
- lines indented by whatever printed them (a README, a wrapper script);
- container prefixes: `kubectl logs --prefix` (`[pod/name/container] `), `kubectl logs --timestamps` and
  the kubelet's CRI files (`2026-11-21T11:08:54.694123456Z stdout F `), docker's json-file (`{"log": ...,
  "time": ...}`), and `grep -n`'s line number (`20591:[2020-06-29 19:49:14,212] INFO ...`);
- `java.util.Date`'s own text (`Wed Feb 10 22:14:31 GMT 2021 <message>`, as applications print it);
- java.util.logging's two-line records: `Jul 17, 2026 1:50:29 PM <class> <method>`, then `INFO: <message>`
  (the message line takes the time of the header just before it: `log_lines.record_time`).
The line's own stamp wins over a container's (it is the application's clock); a zone, when written, is
honoured (times are UTC in the tables), and a stamp without zone is taken as UTC.

The shape test (`LOG_LINE`) runs on every line, so it is one anchored regular expression; the message and
time are extracted only for the few lines a pattern recognised.
"""

from __future__ import annotations

from pyspark.sql import Column
from pyspark.sql import functions as F

# A Kafka Streams process id; the tail of a member id.
UUID = r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}"
# `grep -n`'s line number: digits and a colon before a bracketed or dated stamp (never a time of day's hours).
GREP_PREFIX = r"(?:\d+:(?=\[|\d{4}-))?"
# kubectl's --prefix, grep's line number, then a container runtime's own stamp (CRI adds the stream and a
# partial-line flag).
CONTAINER_PREFIX = (
    r"^\s*(?:\[pod/[^\]\s]*\]\s+)?"
    + GREP_PREFIX
    + r"(?:(\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(?:\.\d+)?(?:Z|[+-]\d{2}:?\d{2}))\s+"
    r"(?:(?:stdout|stderr)\s+[FP]\s+)?)?"
)
# The stamp a layout starts the line with: optional bracket, optional date, time, fraction, zone.
STAMP = (
    r"^\s*\[?(?:(\d{4}-\d{2}-\d{2})[ T])?(\d{2}:\d{2}:\d{2})(?:[,.](\d{1,9}))?"
    r"(?:\s?(Z|[+-]\d{2}:?\d{2})(?![\d:]))?\]?"
)
# `java.util.Date.toString()`: weekday, month, day, time, zone, year. Groups: month, day, time, year.
JAVA_DATE = (
    r"^\s*(?:Mon|Tue|Wed|Thu|Fri|Sat|Sun) ([A-Z][a-z]{2}) +(\d{1,2}) (\d{2}:\d{2}:\d{2}) \S+ (\d{4})\b"
)
# java.util.logging's SimpleFormatter header: `Jul 17, 2026 1:50:29 PM <class> <method>`. Group: the time.
JUL_HEADER = r"^\s*([A-Z][a-z]{2} \d{1,2}, \d{4} \d{1,2}:\d{2}:\d{2} [AP]M) \S"
# Any line a log layout wrote: a stamp (after container prefixes), or a JSON object with a time field.
LOG_LINE = (
    r"^\s*(?:\[pod/[^\]\s]*\]\s+)?" + GREP_PREFIX + r"(?:\{.*\"(?:@timestamp|timestamp|time|timeMillis)\"\s*:"
    r"|\[?(?:\d{4}-\d{2}-\d{2}[ T])?\d{2}:\d{2}:\d{2}"
    r"|(?:Mon|Tue|Wed|Thu|Fri|Sat|Sun) [A-Z][a-z]{2} +\d{1,2} \d{2}:\d{2}:\d{2} "
    r"|[A-Z][a-z]{2} \d{1,2}, \d{4} \d{1,2}:\d{2}:\d{2} [AP]M )"
)
# The rest of a multi-line record: stack frames, causes, indented continuations, a closing brace, the
# Streams assignor's lines (`<process uuid>=[activeTasks: ...]` per node, `and stateless tasks: [...]`), and
# the lines of a boxed notice (`* ...` between rows of `*`, as every 4.x classic consumer logs on start).
CONTINUATION = (
    r"^(?:\[pod/[^\]\s]*\]\s+)?(?:\s+\S|\*|Caused by: |Suppressed: "
    r"|\.\.\. ?\d+ (?:more|common frames omitted)|" + UUID + r"=\[|and stateless tasks: "
    r"|(?:[a-z][\w$]*\.)+[A-Z][\w$]*(?:Exception|Error|Throwable)\b|[\]}\)]\.?\s*$)"
)
# Kafka's own layout ends each line with the logger in parentheses: `(kafka.coordinator.group.X)`,
# `(org.apache.kafka...ConsumerCoordinator:826)`. A name without a package, as in `(MemberIdRequired
# Exception)`, belongs to the message.
LOGGER_SUFFIX = r"\s+\((?:[A-Za-z_$][\w$]*\.)+[\w$]+(?::\d+)?\)\s*$"
JSON_MESSAGE_FIELDS = ("message", "log", "msg")
JSON_TIME_FIELDS = ("@timestamp", "timestamp", "time")


def _json(text: Column, field: str) -> Column:
    return F.get_json_object(text, f"$['{field}']")


def _unwrapped(value: Column) -> Column:
    """The line without container prefixes, and a JSON layout's message in place of the object."""
    bare = F.regexp_replace(value, CONTAINER_PREFIX, "")
    message = F.coalesce(*[_json(bare, field) for field in JSON_MESSAGE_FIELDS])
    return F.when(bare.startswith("{"), F.coalesce(message, bare)).otherwise(bare)


def message(value: Column) -> Column:
    """What the patterns read: the unwrapped line without Kafka's trailing logger name."""
    return F.regexp_replace(_unwrapped(value), LOGGER_SUFFIX, "")


def _stamp_text(text: Column, default_date: str) -> Column:
    """An ISO-8601 string from the leading stamp of `text` (empty when it has none)."""
    date = F.regexp_extract(text, STAMP, 1)
    time = F.regexp_extract(text, STAMP, 2)
    fraction = F.rpad(F.regexp_extract(text, STAMP, 3), 3, "0")
    zone = F.regexp_extract(text, STAMP, 4)
    zone = F.when(zone == "Z", "+00:00").otherwise(F.regexp_replace(zone, r"^([+-]\d{2})(\d{2})$", "$1:$2"))
    return F.when(
        time != "",
        F.concat(
            F.when(date == "", F.lit(default_date)).otherwise(date),
            F.lit("T"),
            time,
            F.lit("."),
            fraction,
            zone,
        ),
    )


def _java_date(text: Column) -> Column:
    """A `java.util.Date.toString()` stamp at the start of `text` (its zone name is not read: UTC)."""
    parts = [F.regexp_extract(text, JAVA_DATE, group) for group in (4, 1, 2, 3)]
    spelled = F.concat_ws(" ", *parts)
    return F.when(text.rlike(JAVA_DATE), F.try_to_timestamp(spelled, F.lit("yyyy MMM d HH:mm:ss")))


def jul_header_time(value: Column) -> Column:
    """The time of a java.util.logging header line (null for any other line)."""
    spelled = F.regexp_extract(value, JUL_HEADER, 1)
    return F.when(spelled != "", F.try_to_timestamp(spelled, F.lit("MMM d, yyyy h:mm:ss a")))


def timestamp(value: Column, default_date: str) -> Column:
    """When the line was written: its own stamp, else a JSON layout's time field, else the container's."""
    bare = F.regexp_replace(value, CONTAINER_PREFIX, "")
    inner = _unwrapped(value)
    json_time = F.when(
        bare.startswith("{"),
        F.coalesce(
            *[_json(bare, field) for field in JSON_TIME_FIELDS],
            F.timestamp_millis(_json(bare, "timeMillis").cast("long")).cast("string"),
        ),
    )
    container = F.nullif(F.regexp_extract(value, CONTAINER_PREFIX, 1), F.lit(""))
    own = F.coalesce(_stamp_text(inner, default_date), json_time, container).cast("timestamp")
    return F.coalesce(own, _java_date(inner), jul_header_time(inner))


def shape(value: Column) -> dict[str, Column]:
    """Boolean columns every line gets (cheap: anchored expressions): `timestamped` (a log line), `blank`,
    and `continuation` (a stack frame or another line of a multi-line record)."""
    timestamped = value.rlike(LOG_LINE)
    blank = F.trim(value) == ""
    return {
        "timestamped": timestamped,
        "blank": blank,
        "continuation": ~timestamped & ~blank & value.rlike(CONTINUATION),
    }
