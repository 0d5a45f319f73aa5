"""A changelog the operator cannot read (deleted, not readable) leaves its tasks' lags unknown, never 0: no
active moves onto a copy that only looks caught up (issue 34). Pure: the view of one read, then the plan."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from smoothscale.assignor.planner import plan
from smoothscale.contract.publication import ClientAssignment, Publication
from smoothscale.control.observed import LearnedSubtopology
from smoothscale.control.snapshot import ClientObservation
from smoothscale.control.step import KafkaView, RoundMemory, planner_snapshot
from smoothscale.control.unknownlags import sizes_with_unknown, without_unknown_lags
from smoothscale.operator.kafka.observer import changelog_events
from smoothscale.operator.kafka.view import MISSING, ClusterView, expected_changelogs, facts
from smoothscale.resource import StreamsAppSpec, load_spec

NOW = datetime(2026, 11, 28, 18, 0, tzinfo=UTC)


def app(**assignment: int) -> StreamsAppSpec:
    return load_spec(
        {
            "template": {"spec": {"containers": [{"name": "app", "image": "orders:1"}]}},
            "topology": {
                "subtopologies": [
                    {"name": "0", "partitions": 2, "inputTopics": ["orders"], "stores": ["counts"]},
                    {
                        "name": "1",
                        "partitions": 2,
                        "inputTopics": ["orders-by-customer"],
                        "stores": ["totals"],
                    },
                ]
            },
            "assignment": {"numStandbys": 1, "acceptableRecoveryLag": 100, **assignment},
            "scaling": {"scaleDownTimeout": "10m"},
        }
    )


# orders-0 is being scaled down; orders-1 holds standbys it has not fetched a record of: a client that never
# fetched a changelog reads its end as 0 and reports lag 0 (Kafka Streams' restore consumer, the bridge)
PUBLISHED = Publication(
    generation=4,
    assignment={
        "orders-0": ClientAssignment(active=["0_0", "0_1", "1_0", "1_1"]),
        "orders-1": ClientAssignment(standby=["0_0", "0_1", "1_0", "1_1"]),
    },
)
CLIENTS = [
    ClientObservation(
        "orders-0", "zone-a", NOW - timedelta(seconds=5), {"0_0": 0, "0_1": 0, "1_0": 0, "1_1": 0}
    ),
    ClientObservation("orders-1", "zone-b", None, {"0_0": 0, "0_1": 0, "1_0": 0, "1_1": 0}),
]


def actives(unknown: frozenset[str]) -> dict[str, str]:
    """Where the plan puts each task's active, with the lags of the `unknown` tasks unknown."""
    spec = app()
    clients = without_unknown_lags(CLIENTS, PUBLISHED, unknown)
    memory = RoundMemory(started_at=NOW, end_offsets={"1_0": 0, "1_1": 0})  # the pods' word: an empty log
    snapshot = planner_snapshot(spec, NOW, clients, PUBLISHED, memory, KafkaView(unknown_lags=unknown))
    return {task: pod for pod, roles in plan(snapshot).assignment.items() for task in roles.active}


def test_an_unreadable_changelogs_tasks_stay_on_their_pod_instead_of_moving_onto_a_copy_of_unknown_lag() -> (
    None
):
    # read as lag 0, subtopology 1's copies on orders-1 pass for caught up: its actives leave orders-0 at once
    assert actives(frozenset()) == dict.fromkeys(["0_0", "0_1", "1_0", "1_1"], "orders-1")
    # unknown, they do not: subtopology 1 stays on the leaving pod until its changelog can be read again
    moved = actives(frozenset({"1_0", "1_1"}))
    assert moved == {"0_0": "orders-1", "0_1": "orders-1", "1_0": "orders-0", "1_1": "orders-0"}


def test_only_the_active_keeps_its_lag_and_a_copy_without_one_counts_as_behind() -> None:
    guarded = without_unknown_lags(CLIENTS, PUBLISHED, {"1_0"})
    assert [dict(c.lags) for c in guarded] == [
        {"0_0": 0, "0_1": 0, "1_0": 0, "1_1": 0},
        {"0_0": 0, "0_1": 0, "1_1": 0},
    ]
    assert sizes_with_unknown({"1_0": 0, "1_1": 7, "0_0": 3}, {"1_0", "1_1"}, 100) == {
        "1_0": 101,
        "1_1": 101,
        "0_0": 3,
    }
    assert sizes_with_unknown({"1_0": 5000}, {"1_0"}, 100) == {"1_0": 5000}


def test_a_missing_changelog_leaves_the_others_read_and_is_named_with_what_to_do() -> None:
    spec = app()
    view = ClusterView(
        read_at=NOW,
        brokers={1: None},
        replicas={},
        end_offsets={"orders-counts-changelog": [10, 20]},
        unreadable={"orders-totals-changelog": MISSING},
    )
    read = facts(spec, "orders", view, expected_changelogs(spec, "orders"))
    assert read.changelog_offsets == {"0_0": 10, "0_1": 20}
    assert read.unknown_lags == {"1_0", "1_1"}
    assert read.status is not None
    by_topic = {c.topic: c for c in read.status.changelogs}
    assert by_topic["orders-counts-changelog"].unreadable is None
    message = by_topic["orders-totals-changelog"].unreadable
    assert message is not None and message.startswith(
        "changelog topic orders-totals-changelog (subtopology 1) does not exist: its tasks' copies' lags are "
        "unknown, so none of them moves to another pod until it can be read;"
    )
    assert read.unreadable_changelogs == {"orders-totals-changelog": message}
    (warning,) = changelog_events("orders", {}, read.unreadable_changelogs)
    assert (warning.type.value, warning.reason, warning.message) == (
        "Warning",
        "ChangelogUnreadable",
        message,
    )
    assert changelog_events("orders", read.unreadable_changelogs, read.unreadable_changelogs) == []
    (normal,) = changelog_events("orders", read.unreadable_changelogs, {})
    assert normal.reason == "ChangelogsReadable"


def test_under_topology_optimization_a_ktables_source_topic_is_its_changelog() -> None:
    # `builder.table("customers", Materialized.as("customers-store"))` with topology.optimization=all: the
    # store restores from `customers` itself, no orders-customers-store-changelog exists; the app reports it
    spec = load_spec(
        {
            "template": {"spec": {"containers": [{"name": "app", "image": "orders:1"}]}},
            "topology": {
                "subtopologies": [{"name": "0", "partitions": 3, "inputTopics": ["orders", "customers"]}]
            },
        }
    )
    learned = [
        LearnedSubtopology("0", 3, True, ("customers", "orders"), ("customers", "orders-totals-changelog")),
        LearnedSubtopology("9", 3, True, (), ("elsewhere",)),  # not a subtopology of the spec: left out
    ]
    expected = expected_changelogs(spec, "orders", learned)
    assert expected == {"customers": "0", "orders-totals-changelog": "0"}
    view = ClusterView(
        read_at=NOW,
        brokers={1: None},
        replicas={},
        end_offsets={"customers": [1000, 2000, 3000], "orders-totals-changelog": [1, 2, 3]},
    )
    # by names alone `customers` is no changelog: the tasks would look 1000 times smaller than they are
    assert facts(spec, "orders", view).changelog_offsets == {"0_0": 1, "0_1": 2, "0_2": 3}
    read = facts(spec, "orders", view, expected)
    assert read.changelog_offsets == {"0_0": 1001, "0_1": 2002, "0_2": 3003}
    assert read.status is not None
    assert [(c.topic, c.subtopology) for c in read.status.changelogs] == [
        ("customers", "0"),
        ("orders-totals-changelog", "0"),
    ]
