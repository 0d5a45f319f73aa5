"""What a Kafka Streams app's pods report about the app (through the bridge), surfaced on its StreamsApp:
fallbacks of the assignor as a Warning Event and the AssignorFallback condition, the topology in status,
and a hand-written spec.topology that disagrees with it as the TopologyMismatch condition and an Event."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from test_op_reporting import conditions, status_input

from smoothscale.control.appreport import AppReport, observe_app_report, report_problems
from smoothscale.control.assignorfallbacks import RECENT
from smoothscale.control.exposition import parse_metrics
from smoothscale.control.learnedtopology import with_reported_topology
from smoothscale.control.observed import LearnedSubtopology, PodMetrics, ScrapeResult
from smoothscale.control.snapshot import task_ids
from smoothscale.control.status import build_status
from smoothscale.resource import InvalidSpecError, MetricNames, load_spec

NOW = datetime(2026, 11, 26, 10, 0, tzinfo=UTC)

# As the bridge's Prometheus registry writes it (bridge/smoothscale-streams: AssignorMetrics, TopologyReport).
BRIDGE_METRICS = """\
# HELP smoothscale_bridge_assignor_fallbacks_total Rebalances this instance led with Kafka's own assignment.
# TYPE smoothscale_bridge_assignor_fallbacks_total counter
smoothscale_bridge_assignor_fallbacks_total{reason="missing_task"} 1.0
smoothscale_bridge_assignor_fallbacks_total{reason="unknown_client"} 2.0
# HELP smoothscale_bridge_topology_partitions Partitions (tasks) of each subtopology of the app.
# TYPE smoothscale_bridge_topology_partitions gauge
smoothscale_bridge_topology_partitions{changelog_topics="shop-totals-changelog",input_topics="orders",\
stateful="true",subtopology="0"} 4.0
smoothscale_bridge_topology_partitions{changelog_topics="",input_topics="shop-by-customer-repartition",\
stateful="false",subtopology="1"} 4.0
smoothscale_task_lag{task="0_1"} 3.0
"""

TOPOLOGY = (
    LearnedSubtopology("0", 4, True, ("orders",), ("shop-totals-changelog",)),
    LearnedSubtopology("1", 4, False, ("shop-by-customer-repartition",), ()),
)


def spec(*subtopologies: dict[str, object]) -> object:
    return load_spec(
        {
            "runtime": "KafkaStreams",
            "template": {"spec": {"containers": [{"name": "app", "image": "orders:1"}]}},
            "topology": {"subtopologies": list(subtopologies)},
        }
    )


MATCHING = spec(
    {"name": "0", "partitions": 4, "inputTopics": ["orders"]},
    {"name": "1", "partitions": 4, "stateful": False},
)


def pods(**fallbacks: dict[str, int]) -> dict[str, ScrapeResult]:
    return {pod: PodMetrics(fallbacks=counts, topology=TOPOLOGY) for pod, counts in fallbacks.items()}


def test_the_bridges_fallbacks_and_topology_are_read_from_its_metrics() -> None:
    metrics = parse_metrics(BRIDGE_METRICS, MetricNames())
    assert metrics.fallbacks == {"missing_task": 1, "unknown_client": 2}
    assert metrics.topology == TOPOLOGY
    assert metrics.lags == {"0_1": 3}


def test_a_fallback_counted_since_the_last_round_is_an_event_and_a_condition_while_recent() -> None:
    first, events = observe_app_report(
        AppReport(), pods(**{"orders-0": {"unknown_client": 2}}), MATCHING, NOW
    )
    assert events == [], "the first sight of a pod is its baseline (an operator restart repeats nothing)"
    later = NOW + timedelta(seconds=5)
    second, events = observe_app_report(
        first, pods(**{"orders-0": {"unknown_client": 3, "missing_task": 1}, "orders-1": {}}), MATCHING, later
    )
    assert [(e.type, e.reason) for e in events] == [("Warning", "AssignorFallback")]
    assert "missing_task on orders-0; unknown_client on orders-0" in events[0].message

    fallback, topology, mismatch = report_problems(second, later)
    status = build_status(status_input(fallback=fallback, topology=topology, topology_mismatch=mismatch))
    assert conditions(status)["AssignorFallback"] == ("True", "AssignorFellBack")
    assert conditions(status)["TopologyMismatch"] == ("False", "TopologyMatches")
    assert [s.name for s in status.topology] == ["0", "1"]
    assert status.topology[0].changelog_topics == ["shop-totals-changelog"]

    quiet, events = observe_app_report(
        second,
        pods(**{"orders-0": {"unknown_client": 3, "missing_task": 1}}),
        MATCHING,
        later + RECENT + timedelta(seconds=1),
    )
    assert events == []
    assert report_problems(quiet, later + RECENT + timedelta(seconds=1))[0] is None


def test_a_restarted_pod_counting_again_is_a_new_fallback() -> None:
    first, _ = observe_app_report(AppReport(), pods(**{"orders-0": {"no_publication": 4}}), MATCHING, NOW)
    _, events = observe_app_report(first, pods(**{"orders-0": {"no_publication": 1}}), MATCHING, NOW)
    assert [e.reason for e in events] == ["AssignorFallback"]


def test_a_hand_written_topology_that_disagrees_with_the_app_is_named_difference_by_difference() -> None:
    stale = spec({"name": "0", "partitions": 2, "inputTopics": ["orders"]}, {"name": "7", "partitions": 2})
    report, events = observe_app_report(AppReport(), pods(**{"orders-0": {}}), stale, NOW)
    assert [(e.type, e.reason) for e in events] == [("Warning", "TopologyMismatch")]
    message = events[0].message
    assert "subtopology 1 (4 partitions) runs in the app but is missing from spec.topology" in message
    assert "subtopology 7 is in spec.topology but the app has no such subtopology" in message
    assert "subtopology 0 has 4 partitions in the app, 2 in spec.topology" in message

    again, events = observe_app_report(report, pods(**{"orders-0": {}}), stale, NOW)
    assert events == [], "an unchanged mismatch is not posted every round"
    status = build_status(
        status_input(
            **dict(
                zip(("fallback", "topology", "topology_mismatch"), report_problems(again, NOW), strict=True)
            )
        )
    )
    assert conditions(status)["TopologyMismatch"] == ("True", "TopologyDiffers")

    _, events = observe_app_report(again, pods(**{"orders-0": {}}), MATCHING, NOW)
    assert [(e.type, e.reason) for e in events] == [("Normal", "TopologyMatches")]


def test_apps_whose_pods_report_no_topology_get_neither_condition() -> None:
    status = build_status(status_input())
    assert "AssignorFallback" not in conditions(status)
    assert "TopologyMismatch" not in conditions(status)
    assert status.topology == []


def test_a_kafka_streams_app_may_leave_its_topology_to_the_app() -> None:
    unwritten = load_spec(
        {
            "runtime": "KafkaStreams",
            "template": {"spec": {"containers": [{"name": "app", "image": "orders:1"}]}},
        }
    )
    assert with_reported_topology(unwritten, None, "shop") is None, "no plan before the app reports its tasks"
    planned = with_reported_topology(unwritten, TOPOLOGY, "shop")
    assert planned is not None
    assert task_ids(planned) == [f"{s}_{p}" for s in (0, 1) for p in range(4)]
    assert [sub.stateful for sub in planned.topology.subtopologies] == [True, False]
    assert planned.topology.subtopologies[0].stores == ["totals"], "read from shop-totals-changelog"
    assert with_reported_topology(MATCHING, TOPOLOGY, "shop") is MATCHING, (
        "a written topology is planned with as is"
    )
    _, events = observe_app_report(AppReport(), pods(**{"orders-0": {}}), unwritten, NOW)
    assert events == [], "nothing written, nothing to disagree with"


def test_a_client_library_app_still_needs_its_topology() -> None:
    with pytest.raises(InvalidSpecError) as raised:
        load_spec({"template": {"spec": {"containers": [{"name": "app", "image": "orders:1"}]}}})
    assert any(
        p.startswith("spec.topology.subtopologies: required for runtime ClientLibrary")
        for p in raised.value.problems
    )


def test_a_store_with_logging_disabled_gets_no_standbys_and_a_written_stateful_subtopology_is_named() -> None:
    no_changelog = (LearnedSubtopology("0", 2, True, ("orders",), ()),)
    template = {"spec": {"containers": [{"name": "app", "image": "orders:1"}]}}
    unwritten = load_spec({"runtime": "KafkaStreams", "template": template})
    planned = with_reported_topology(unwritten, no_changelog, "shop")
    assert planned is not None and not planned.topology.subtopologies[0].stateful, (
        "no standby or warmup planned"
    )

    written = spec({"name": "0", "partitions": 2, "inputTopics": ["orders"]})
    results: dict[str, ScrapeResult] = {"orders-0": PodMetrics(topology=no_changelog)}
    _, events = observe_app_report(AppReport(), results, written, NOW)
    assert "subtopology 0's stores have logging disabled in the app" in events[0].message
    assert written.topology.subtopologies[0].stateful
    planned = with_reported_topology(written, no_changelog, "shop")
    assert planned is not None and not planned.topology.subtopologies[0].stateful, (
        "written stateful, but Kafka gives its tasks no standby: planned without, so that the pods can "
        "follow the plan (the bridge drops such standbys and the pods never see them)"
    )
    assert with_reported_topology(written, None, "shop") is written, "as written until the app reports"
