"""`analyze` on excerpts written in real Kafka's formats for versions and layouts the tests cannot run
(tests/pipeline/kafka_formats/, see its README): each incident found at its time with its members, and no
other diagnosis; the rebalance table's generations; one line in every layout read with its time."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from smoothscale.pipeline import log_lines
from smoothscale.pipeline.analyze import AnalyzeInputs, AnalyzeResult, analyze
from smoothscale.pipeline.report import write_report

FOLDER = Path(__file__).parent / "kafka_formats"
LOG_DATE = "2026-03-04"  # the logback excerpt stamps its lines with a time of day only
SHIPPING = "shipping-5e6f7a8b-3333-4c4d-8e9f-0a1b2c3d4e5f"
ORDERS = "orders-app-0b1c2d3e-1111-4a2b-8c3d-4e5f6a7b8c9d"
REFUNDS = "refunds-app-7d8e9f0a-2222-4b3c-9d4e-5f6a7b8c9d0e"

FRAUD = "fraud-1a2b3c4d-5e6f-4a7b-8c9d-0e1f2a3b4c5d"
ORDERS_25 = "invoicing-6c5d4e3f-2a1b-4c0d-9e8f-7a6b5c4d3e2f"
OLD_ORDERS_0 = "hN4xT0qWRkO2sA7bC9dE1f"  # the member of the replaced pod, holding group.instance.id orders-0
EXPIRED = tuple(f"consumer-telemetry-{n}" for n in range(6, 21))
STATIC_BLOCKED = ("static-member-blocked", datetime(2026, 8, 19, 5, 40, 0, 35000), ("orders-0", OLD_ORDERS_0))
FLAPPING = ("membership-churn", datetime(2026, 11, 2, 16, 0, 40), ("alerts-2",))

# file -> (kind, time, members) of every diagnosis whose evidence is in the file
EXPECTED: dict[str, set[tuple[str, datetime, tuple[str, ...]]]] = {
    "broker-1.1-old-wording.log": set(),
    "broker-3.7-consumer-protocol.log": set(),
    "broker-2.8-zookeeper.log": {
        # one member gone is no churn: the group shrank
        ("heartbeat-expiration", datetime(2026, 3, 2, 10, 5, 10, 500000), ("consumer-payments-2",)),
    },
    "broker-2.8-member-swap-slow-rebalance.log": {
        # a member swapped in one (slow) rebalance is no churn; the expiry it waited for is part of it
        ("slow-rebalance", datetime(2026, 7, 22, 9, 15), ("search-2",)),
    },
    "broker-3.3-member-flapping.log": {FLAPPING},
    "consumer-3.3-member-flapping.log": set(),  # the rebalance table cites the coordinator's lines
    "broker-3.5-sync-store-failure.log": {
        ("assignment-store-failure", datetime(2026, 4, 14, 3, 12, 3, 145000), ("consumer-postings-1",)),
    },
    "broker-4.3-sync-store-timeout.log": {
        ("assignment-store-failure", datetime(2026, 11, 26, 17, 20, 59, 686000), ("store-1",)),
    },
    "consumer-2.8-sync-store-failure.log": {
        ("assignment-store-failure", datetime(2026, 4, 15, 22, 40, 3, 42000), ("consumer-journal-1",)),
    },
    "consumer-3.6-coordinator-loop.log": {
        (
            "coordinator-loop",
            datetime(2026, 5, 20, 17, 5, 0, 71000),
            ("consumer-invoices-1", "consumer-invoices-2", "consumer-invoices-3"),
        ),
    },
    "broker-4.1-healthy-scale-out.log": set(),  # 1 -> 2 -> 3 members: growth, no churn
    "consumer-4.1-healthy-scale-out.log": set(),
    "broker-4.1-mass-session-expiry.log": {
        ("heartbeat-expiration", datetime(2026, 10, 14, 2, 30, 10), EXPIRED),
    },
    "broker-4.1-static-member-unreleased.log": {STATIC_BLOCKED},
    "consumer-4.1-static-member-unreleased.log": {STATIC_BLOCKED},
    "broker-4.3-consumer-protocol.log": {
        ("heartbeat-expiration", datetime(2026, 9, 15, 16, 21), ("J8mB0rXcS2eL6tYuV9aZ3Q",)),
    },
    "connect-2.6-worker-rebalance-storm.log": {
        ("sync-storm", datetime(2026, 2, 3, 11, 30, 2, 605000), ("connect-1",)),
    },
    "connect-3.4-worker-sync-storm.log": {
        # the rejoin loop the storm makes is the storm, one incident
        ("sync-storm", datetime(2026, 5, 10, 7, 0, 3, 30000), ("connect-1",)),
    },
    "consumer-4.1-consumer-protocol.log": set(),
    "consumer-3.6-commit-failed-threads.log": {
        (
            "commit-failed",
            datetime(2026, 6, 2, 14, 22, 2, 260000),
            tuple(f"consumer-payouts-{n}" for n in range(2, 7)),
        ),
    },
    "consumer-3.6-logback-time-only.log": {
        ("poll-timeout", datetime(2026, 3, 4, 9, 14, 3, 512000), ("consumer-billing-1",)),
    },
    "consumer-3.7-static-member-kubectl.log": {
        ("fencing", datetime(2026, 8, 1, 6, 0, 0, 20000), ("consumer-checkout-checkout-0",)),
    },
    "streams-2.5-poll-timeout-fenced.log": {
        # the poll timeout and the fencing it led to are one incident
        ("poll-timeout", datetime(2026, 3, 9, 19, 2), (f"{ORDERS_25}-StreamThread-2-consumer",)),
    },
    "streams-2.7-probing-epoch-ms.log": {
        ("regular-probing", datetime(2026, 1, 12, 8, 10, 0, 80000), (f"{FRAUD}-StreamThread-1",)),
    },
    "consumer-4.3-coordinator-loading.log": {
        # the coordinator's node is written `isFenced: false`: no fencing
        ("coordinator-loss", datetime(2026, 11, 20, 7, 0, 3, 85000), ("consumer-ledger-1",)),
    },
    "streams-2.8-kubernetes-cri.log": {
        ("coordinator-loss", datetime(2026, 7, 1, 8), (f"{SHIPPING}-StreamThread-1-consumer",)),
        ("never-stabilised", datetime(2026, 7, 1, 8, 0, 0, 5000), (SHIPPING,)),
    },
    "streams-3.2-logstash-json.log": {
        # 12:00:05+02:00
        ("fencing", datetime(2026, 6, 1, 10, 0, 5), (f"{ORDERS}-StreamThread-2",)),
    },
    "streams-3.5-ecs-json.log": {
        ("thread-replacement", datetime(2026, 6, 1, 10, 0, 5, 20000), (REFUNDS,)),
    },
    "streams-4.3-client-id-log4j.log": {
        ("thread-replacement", datetime(2026, 10, 2, 11, 0, 5, 20000), ("shop-0",)),
    },
    "streams-4.3-probing-log4j.log": set(),  # an instance joining is growth, no churn
    # rebalances 150 s apart, each closed by the leader's "Finished stable assignment": no probing
    "streams-3.0-healthy-rebalances.log": set(),
}


@pytest.fixture(scope="module")
def result(spark: Any, tmp_path_factory: pytest.TempPathFactory) -> AnalyzeResult:
    logs = sorted(str(p) for p in FOLDER.glob("*.log"))
    inputs = AnalyzeInputs(
        journals=[], logs=logs, out=tmp_path_factory.mktemp("formats"), default_date=LOG_DATE
    )
    return analyze(spark, inputs)


@pytest.fixture(scope="module")
def diagnosed(result: AnalyzeResult) -> list[dict[str, Any]]:
    return [row.asDict() for row in result.tables["diagnoses"].collect()]


def test_every_excerpt_is_read_whole(result: AnalyzeResult) -> None:
    """Every line is a log line, a continuation of one or blank; all rebalance lines are recognised."""
    by_file = {Path(f["file"]).name: f for f in result.inputs}
    assert set(by_file) == set(EXPECTED)
    for name, counts in by_file.items():
        assert counts["unknown"] == 0, name
        assert counts["unrecognised"] == 0, name
        assert counts["recognised"] > 0, name


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_each_incident_at_its_time_with_its_members(diagnosed: list[dict[str, Any]], name: str) -> None:
    found = {
        (d["kind"], d["ts"], tuple(d["members"]))
        for d in diagnosed
        if any(cite.rsplit(":", 1)[0] == name for cite in d["evidence"])
    }
    assert found == EXPECTED[name]


def test_one_incident_seen_twice_is_one_diagnosis(diagnosed: list[dict[str, Any]]) -> None:
    """The coordinator's "has failed" line and its "Preparing to rebalance ... heartbeat expiration" reason
    are one expiration; the client's poll-timeout WARN and its LeaveGroup line are one poll timeout."""
    (expired,) = [d for d in diagnosed if d["kind"] == "heartbeat-expiration" and d["group"] == "payments"]
    assert expired["evidence"] == ["broker-2.8-zookeeper.log:5", "broker-2.8-zookeeper.log:6"]
    (poll,) = [d for d in diagnosed if d["kind"] == "poll-timeout" and d["group"] == "billing"]
    assert poll["occurrences"] == 2
    (storm,) = [d for d in diagnosed if d["kind"] == "sync-storm" and d["group"] == "connect-cluster"]
    assert storm["detail"].startswith("6 rebalance rounds failed in 15.0 s")
    assert "with it, rejoin-loop: " in storm["detail"]


def test_a_mass_session_expiry_is_one_incident_naming_every_member(diagnosed: list[dict[str, Any]]) -> None:
    (expired,) = [d for d in diagnosed if d["group"] == "telemetry"]
    assert expired["kind"] == "heartbeat-expiration" and expired["occurrences"] == 16  # 15 lines + 1 reason
    assert expired["detail"].startswith("15 members missed their heartbeats within 0.5 s (session timeout)")


def test_a_healthy_scale_out_is_no_churn(result: AnalyzeResult, diagnosed: list[dict[str, Any]]) -> None:
    """The group grows from 1 to 3 members, as the coordinator and the leader's listings show."""
    assert [d for d in diagnosed if d["group"] == "archive"] == []
    rows = result.tables["generations"].where("group = 'archive'").orderBy("generation")
    assert [r["member_count"] for r in rows.collect()] == [1, 2, 3]


def test_the_coordinator_failing_to_store_the_assignment_folds_the_storm_it_causes(
    diagnosed: list[dict[str, Any]],
) -> None:
    """NOT_ENOUGH_REPLICAS on __consumer_offsets: the coordinator's reason (4 times), and on a member's side
    SyncGroup failing after each successful JoinGroup, with the coordinator lost and found again each time:
    one incident each, their rejoin loops and coordinator losses cited in it."""
    (broker,) = [d for d in diagnosed if d["group"] == "postings"]
    assert broker["kind"] == "assignment-store-failure" and "COORDINATOR_NOT_AVAILABLE" in broker["detail"]
    (client,) = [d for d in diagnosed if d["group"] == "journal"]
    assert client["kind"] == "assignment-store-failure"
    assert client["detail"].startswith("the coordinator failed 4 times in 9.4 s to store the group's")


def test_the_rebalance_table_from_each_source(result: AnalyzeResult) -> None:
    rows = {(r["group"], r["generation"]): r.asDict() for r in result.tables["generations"].collect()}
    payments_2 = rows[("payments", 2)]
    assert payments_2["member_count"] == 1 and payments_2["leader"] == "consumer-payments-1"
    assert payments_2["reason"].startswith("removing member consumer-payments-2-0a4f0b8e")
    assert payments_2["duration_s"] == pytest.approx(3.019)
    inventory = rows[("inventory", 43)]  # before 2.4: no state, no reason; the group emptied
    assert inventory["member_count"] == 0 and inventory["reason"] is None
    connect = rows[("connect-cluster", 13)]
    assert connect["leader"] == "connect-1" and connect["members"] == ["connect-1"]
    billing = rows[("billing", 5)]
    assert billing["start"] == datetime(2026, 3, 4, 9, 13, 40, 312000)
    assert billing["end"] == datetime(2026, 3, 4, 9, 13, 43, 360000)


def test_a_streams_client_named_by_its_client_id_is_in_its_group(diagnosed: list[dict[str, Any]]) -> None:
    """smoothscale's bridge sets `client.id` to the pod name: the thread and client lines name no group,
    the consumer's lines do."""
    (replaced,) = [d for d in diagnosed if d["kind"] == "thread-replacement" and d["members"] == ["shop-0"]]
    assert replaced["group"] == "shop"


def test_member_epochs_of_the_consumer_protocol_in_the_rebalance_table(result: AnalyzeResult) -> None:
    """KIP-848: a member reaching STABLE at an epoch completes that group epoch, as the coordinator records
    too; leaving completes nothing."""
    audit = result.tables["generations"].where("group = 'audit'").orderBy("generation")
    rows = [r.asDict() for r in audit.collect()]
    assert [(r["generation"], r["members"], r["sources"]) for r in rows] == [
        (5, ["consumer-audit-1"], ["broker", "client"]),
        (7, ["consumer-audit-1"], ["client"]),
    ]
    assert rows[1]["end"] == datetime(2026, 9, 20, 14, 3, 10, 90000)


def test_the_assignor_listing_inside_a_json_record(result: AnalyzeResult) -> None:
    (rebalance,) = [
        r.asDict()
        for r in result.tables["rebalances"].where("source = 'assignor' AND group = 'orders-app'").collect()
    ]
    assert (rebalance["nodes"], rebalance["consumers"]) == (2, 3)
    assert rebalance["leader"] == f"{ORDERS}-StreamThread-1-consumer"
    probing = result.tables["log_incidents"].where("kind = 'probing-scheduled' AND group = 'orders-app'")
    assert [p["scheduled_ms"] for p in probing.collect()] == [1780308600130]  # before 3.4: epoch ms


def test_probing_times_written_as_dates(result: AnalyzeResult) -> None:
    """Kafka Streams 4.x writes when a probing rebalance is due as a date with its zone."""
    due = int(datetime(2026, 10, 1, 9, 2, 0, 20000, tzinfo=UTC).timestamp() * 1000)
    lines = result.tables["log_incidents"].where("group = 'pay' AND scheduled_ms IS NOT NULL").collect()
    assert sorted((r["kind"], r["scheduled_ms"]) for r in lines) == [
        ("followup-triggered", due),
        ("probing-scheduled", due),
        ("probing-scheduled", due),
    ]


def test_a_probing_time_in_another_zone(spark: Any) -> None:
    thread = "pay-0c1d2e3f-4a5b-4c6d-8e7f-8091a2b3c4d5-StreamThread-1"
    (row,) = parse_lines(
        spark,
        [
            f"[2026-10-01 11:01:00,022] INFO stream-thread [{thread}] Requested to schedule next probing"
            " rebalance at 2026-10-01 11:02:00,020 +02:00 to try for a more balanced assignment."
        ],
    ).values()
    due = datetime(2026, 10, 1, 9, 2, 0, 20000, tzinfo=UTC)
    assert (row["kind"], row["scheduled_ms"]) == ("probing-scheduled", int(due.timestamp() * 1000))


MESSAGE = (
    "[Consumer clientId=c-1, groupId=g] Request joining group due to: rebalance failed due to 'The group"
    " member needs to have a valid member id before actually entering a consumer group.'"
    " (MemberIdRequiredException)"
)
JSON_MESSAGE = MESSAGE.replace("'", "\\u0027")
# (layout, line, time read) -- the same message in every layout
LAYOUTS = [
    ("kafka log4j", f"[2026-11-21 11:08:54,694] INFO {MESSAGE} (org.apache.kafka.clients.consumer.internals.ConsumerCoordinator)", "11:08:54.694"),  # noqa: E501
    ("log4j ISO8601", f"2026-11-21 11:08:54,694 INFO  [main] ConsumerCoordinator - {MESSAGE}", "11:08:54.694"),  # noqa: E501
    ("ISO T and Z", f"2026-11-21T11:08:54.694Z INFO {MESSAGE}", "11:08:54.694"),
    ("ISO with offset", f"2026-11-21T12:08:54.694+01:00 INFO {MESSAGE}", "11:08:54.694"),
    ("offset without colon", f"2026-11-21 12:08:54.694+0100 INFO {MESSAGE}", "11:08:54.694"),
    ("Spring Boot 2", f"2026-11-21 11:08:54.694  INFO 8564 --- [-StreamThread-1] o.a.k.c.c.i.ConsumerCoordinator  : {MESSAGE}", "11:08:54.694"),  # noqa: E501
    ("logback time only", f"11:08:54.694 [main] INFO  o.a.k.c.c.i.ConsumerCoordinator - {MESSAGE}", "11:08:54.694"),  # noqa: E501
    ("indented", f"    [2026-11-21 11:08:54,694] INFO {MESSAGE}", "11:08:54.694"),
    ("logstash JSON", f'{{"@timestamp":"2026-11-21T12:08:54.694+01:00","@version":"1","message":"{JSON_MESSAGE}","level":"INFO"}}', "11:08:54.694"),  # noqa: E501
    ("ECS JSON", f'{{"@timestamp":"2026-11-21T11:08:54.694Z","log.level":"INFO","message":"{JSON_MESSAGE}","ecs.version":"1.2.0"}}', "11:08:54.694"),  # noqa: E501
    ("log4j2 JsonLayout", f'{{"timeMillis":1795259334694,"thread":"main","level":"INFO","message":"{JSON_MESSAGE}"}}', "11:08:54.694"),  # noqa: E501
    ("kubectl --prefix", f"[pod/app-0/app] [2026-11-21 11:08:54,694] INFO {MESSAGE}", "11:08:54.694"),
    ("CRI", f"2026-11-21T11:08:54.699123456Z stdout F [2026-11-21 11:08:54,694] INFO {MESSAGE}", "11:08:54.694"),  # noqa: E501
    ("docker json-file", f'{{"log":"{JSON_MESSAGE}\\n","stream":"stdout","time":"2026-11-21T11:08:54.694Z"}}', "11:08:54.694"),  # noqa: E501
]  # fmt: skip


def parse_lines(spark: Any, lines: list[str]) -> dict[int, dict[str, Any]]:
    """The recognised ones of `lines` (numbered from 1), by line number."""
    rows = [("lines.log", n, line) for n, line in enumerate(lines, start=1)]
    frame = log_lines.with_shape(
        log_lines.with_pattern(spark.createDataFrame(rows, "file string, line long, value string"))
    )
    return {r["line"]: r.asDict() for r in log_lines.incidents(frame, "2026-11-21").collect()}


def test_one_message_in_every_layout(spark: Any) -> None:
    found = parse_lines(spark, [line for _, line, _ in LAYOUTS])
    for n, (layout, _, time) in enumerate(LAYOUTS, start=1):
        row = found.get(n)
        assert row is not None and row["kind"] == "join-request", layout
        assert (row["member"], row["group"]) == ("c-1", "g"), layout
        # the reason keeps the exception's name, and no logger name
        assert row["reason"].endswith("consumer group.' (MemberIdRequiredException)"), layout
        assert row["ts"] == datetime.fromisoformat(f"2026-11-21T{time}"), layout


def test_the_report_states_coverage_and_the_rebalance_table(result: AnalyzeResult, tmp_path: Path) -> None:
    page = write_report(result, tmp_path).read_text()
    assert f"{len(result.tables['diagnoses'].collect())} diagnoses from " in page
    assert "<h2>Rebalances</h2>" in page and "connect-cluster" in page and "payments" in page
    assert "Recognised lines per file and kind" in page and "sync-failed" in page


def test_a_report_on_logs_it_cannot_read_says_so(spark: Any, tmp_path: Path) -> None:
    """Syslog-style lines (a layout the parser does not read) holding a rebalance: no diagnosis, and the
    report must not call that "nothing suspicious"."""
    syslog = tmp_path / "syslog.log"
    syslog.write_text(
        "".join(
            f"Nov 21 11:0{n}:00 node-{n} java[812]: [Consumer clientId=c-{n}, groupId=g] SyncGroup failed:"
            " The group began another rebalance. Need to re-join the group.\n"
            for n in range(6)
        )
    )
    inputs = AnalyzeInputs(journals=[], logs=[str(syslog)], out=tmp_path / "out")
    page = write_report(analyze(spark, inputs), tmp_path / "out").read_text()
    assert "Could not judge: syslog.log: only 0% of its lines are in a layout the parser reads" in page
    assert "nothing suspicious" not in page
