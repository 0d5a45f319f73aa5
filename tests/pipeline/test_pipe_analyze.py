"""`analyze` on logs and a journal with known incidents (pipe_testkit): the diagnoses of the rebalancing
guide with their times, members and cited lines; the restore rate the journal was generated with; time to
balance; unknown log lines and malformed journal lines counted, not fatal."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from pipe_testkit import (
    APP,
    MALFORMED_JOURNAL,
    PROBE_INTERVAL_S,
    PROBES,
    RESTORE_RATE,
    Incidents,
    at,
)

from smoothscale.pipeline import synthetic as syn
from smoothscale.pipeline.analyze import AnalyzeInputs, AnalyzeResult, analyze


@pytest.fixture(scope="module")
def result(spark: Any, incidents: Incidents, tmp_path_factory: pytest.TempPathFactory) -> AnalyzeResult:
    inputs = AnalyzeInputs(
        journals=[str(incidents.journal)],
        logs=[str(p) for p in incidents.logs],
        out=tmp_path_factory.mktemp("analyze"),
        zones={f"{APP}-3": "zone-a", f"{APP}-4": "zone-b", f"{APP}-5": "zone-c"},
    )
    return analyze(spark, inputs)


@pytest.fixture(scope="module")
def found(result: AnalyzeResult) -> list[dict[str, Any]]:
    return [row.asDict() for row in result.tables["diagnoses"].orderBy("ts", "kind").collect()]


def only(found: list[dict[str, Any]], kind: str) -> list[dict[str, Any]]:
    return [d for d in found if d["kind"] == kind]


def naive(ts: Any) -> Any:
    return ts.replace(tzinfo=None)


def test_closely_grouped_rebalances_cite_both_lines_and_the_sync_failure(
    found: list, incidents: Incidents
) -> None:
    (close,) = only(found, "closely-grouped")
    assert close["ts"] == naive(at(10, 57.362))
    assert close["members"] == [syn.thread(APP, 0, 1)]
    assert close["interval_s"] == pytest.approx(0.022, abs=1e-3)
    cites = incidents.cites
    assert set(close["evidence"]) == {cites["leader_0_1"], cites["close_second"], cites["sync_failed"]}


def test_leader_changes_name_both_leaders(found: list, incidents: Incidents) -> None:
    changes = only(found, "leader-change")
    assert [(d["ts"], d["members"]) for d in changes] == [
        (naive(at(9, 45.375)), [syn.thread(APP, 0, 2), syn.thread(APP, 1, 1)]),
        (naive(at(10, 57.340)), [syn.thread(APP, 1, 1), syn.thread(APP, 0, 1)]),
    ]
    assert changes[0]["evidence"] == [incidents.cites["first"], incidents.cites["leader_1_1"]]


def test_a_member_back_after_its_poll_timeout_is_part_of_that_incident(
    found: list, incidents: Incidents
) -> None:
    """Member 1-2 left the rebalance after its poll timeout and came back a minute later: churn, which the
    poll timeout explains, so one incident that cites the rebalances it left and came back in."""
    assert only(found, "membership-churn") == []
    (poll,) = only(found, "poll-timeout")
    assert {incidents.cites["churn_gone"], incidents.cites["churn_came"]} <= set(poll["evidence"])
    assert f"{syn.thread(APP, 1, 2)} left at 11:14:30 and came back at 11:15:30" in poll["detail"]


def test_regular_and_endless_probing_with_the_interval(found: list, incidents: Incidents) -> None:
    (regular,) = only(found, "regular-probing")
    assert regular["interval_s"] == pytest.approx(PROBE_INTERVAL_S)
    assert regular["ts"] == naive(at(20, 0))
    assert regular["end_ts"] == naive(at(20, 0) + timedelta(seconds=PROBE_INTERVAL_S * (PROBES - 1)))
    assert regular["evidence"] == sorted(incidents.cites[f"probe_{i}"] for i in range(PROBES))
    endless = [d for d in only(found, "endless-probing") if d["evidence"] == regular["evidence"]]
    assert len(endless) == 1


def test_expirations_replacements_from_client_and_broker_lines(found: list, incidents: Incidents) -> None:
    heartbeat = only(found, "heartbeat-expiration")
    assert [(d["ts"], d["members"], d["evidence"]) for d in heartbeat] == [
        # the coordinator's member id, named by its client id as the client's own lines name it
        (naive(incidents.times["hb"]), [syn.thread(APP, 0, 2)], [incidents.cites["hb_broker"]])
    ]
    # The client's line and the coordinator's reason half a second later are one incident.
    (poll,) = only(found, "poll-timeout")
    assert (poll["ts"], poll["members"]) == (naive(incidents.times["poll"]), [syn.thread(APP, 1, 2)])
    assert poll["evidence"][:2] == [incidents.cites["poll"], incidents.cites["poll_broker"]]
    assert poll["occurrences"] == 3  # the client's line, the coordinator's, and the churn that followed
    (replaced,) = only(found, "thread-replacement")
    assert replaced["evidence"] == [incidents.cites["replaced"]]


def test_no_other_diagnosis(found: list) -> None:
    kinds = {d["kind"] for d in found}
    assert kinds == {
        "closely-grouped", "leader-change", "regular-probing", "endless-probing",
        "heartbeat-expiration", "poll-timeout", "thread-replacement",
    }  # fmt: skip
    assert len(only(found, "leader-change")) == 2


def test_broker_rebalance_has_generation_reason_and_duration(result: AnalyzeResult) -> None:
    (broker,) = [r.asDict() for r in result.tables["rebalances"].where("source = 'broker'").collect()]
    assert broker["generation"] == 744
    assert broker["consumers"] == 3
    assert broker["duration_s"] == pytest.approx(10.2, abs=1e-3)
    assert "consumer poll timeout" in broker["reason"]


def test_restore_rate_per_task_pod_and_zone_matches_the_generated_rate(result: AnalyzeResult) -> None:
    warmups = [r.asDict() for r in result.tables["warmups"].collect()]
    assert len(warmups) == 4
    for w in warmups:
        assert w["restore_rate"] == pytest.approx(RESTORE_RATE, rel=0.05)
        assert w["handed_over"]
    zones = {r["zone"]: r["mean_restore_rate"] for r in result.tables["restore_by_zone"].collect()}
    assert set(zones) == {"zone-a", "zone-b", "zone-c"}
    assert all(rate == pytest.approx(RESTORE_RATE, rel=0.05) for rate in zones.values())
    assert result.tables["restore_by_pod"].count() == 3


def test_time_to_balance_of_the_scale_out(result: AnalyzeResult, incidents: Incidents) -> None:
    (event,) = [r.asDict() for r in result.tables["time_to_balance"].collect()]
    assert incidents.scale_out is not None and incidents.balanced_at is not None
    expected = (incidents.balanced_at - incidents.scale_out.start).total_seconds()
    assert event["time_to_balance_s"] == pytest.approx(expected)
    assert event["pods"] == [f"{APP}-3", f"{APP}-4", f"{APP}-5"]


def test_unknown_and_malformed_lines_are_counted(result: AnalyzeResult, incidents: Incidents) -> None:
    by_file = {Path(f["file"]).name: f for f in result.inputs}
    # The first garbage line carries the writer's timestamp (a log line of no interest); the others do not.
    assert by_file["node1.log.gz"]["unknown"] == 1  # "%%%"
    assert by_file["node1.log.gz"]["continuation"] == 1  # the stack frame
    assert by_file["journal.jsonl"]["malformed"] == len(MALFORMED_JOURNAL)
    assert by_file["broker.log"]["recognised"] == by_file["broker.log"]["lines"]
    total = sum(f["lines"] for f in result.inputs if f["kind"] == "log")
    assert total > incidents.noise_lines
