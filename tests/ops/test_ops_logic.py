"""The operations commands' decisions as data: targets, refusals, patches, the status table, explain lines."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from smoothscale.cli.ops_drain import drain_refusal
from smoothscale.cli.ops_explain import NoPlan, explain_lines, observation, replan
from smoothscale.cli.ops_scale import parse_to
from smoothscale.cli.ops_status import pod_rows, render, summary
from smoothscale.cli.ops_swap import swap_patch
from smoothscale.contract.publication import ClientAssignment, Publication, Revocation
from smoothscale.control.observed import FailureReason, PodMetrics, ScrapeFailure
from smoothscale.control.pods import PodInfo
from smoothscale.resource import load_spec

NOW = datetime(2026, 11, 22, 3, 0, tzinfo=UTC)


def pod(ordinal: int, *, leaving: str | None = None, node: str = "node-0") -> PodInfo:
    return PodInfo(
        name=f"orders-{ordinal}",
        uid=f"uid-{ordinal}",
        app="orders",
        ordinal=ordinal,
        revision="r1",
        leaving=leaving,
        leaving_reason=None,
        node=node,
        ip="10.0.0.1",
        metrics_port=None,
        phase="Running",
        ready=True,
        deleting=False,
    )


@pytest.mark.parametrize(
    ("text", "current", "replicas"),
    [
        ("80%", 40, 32),
        ("75%", 40, 30),
        ("50%", 5, 3),
        ("1%", 3, 1),
        ("0%", 3, 0),
        ("150%", 4, 6),
        ("6", 3, 6),
    ],
)
def test_a_percentage_is_of_the_current_replicas_rounded_up(text: str, current: int, replicas: int) -> None:
    assert parse_to(text).replicas(current) == replicas


@pytest.mark.parametrize("text", ["8o%", "%", "-1", "80 %%", "2.5", "", "six"])
def test_malformed_targets_are_refused_naming_the_value(text: str) -> None:
    with pytest.raises(ValueError, match="--to"):
        parse_to(text)


def test_only_the_operators_pods_can_be_drained() -> None:
    assert drain_refusal(pod(1), "smoothscale") is None
    assert "not run by smoothscale" in (drain_refusal(pod(1), None) or "")


def test_a_swap_changes_only_a_template_annotation() -> None:
    assert swap_patch(NOW) == {
        "spec": {
            "template": {"metadata": {"annotations": {"smoothscale.io/restartedAt": "2026-11-22T03:00:00Z"}}}
        }
    }


PUBLISHED = Publication(
    generation=7,
    assignment={
        "orders-0": ClientAssignment(active=["0_0", "0_1"], standby=["0_2"]),
        "orders-1": ClientAssignment(active=["0_2"], standby=["0_0"], warmup=["0_1"]),
        "orders-2": ClientAssignment(),
    },
    revoking={"0_3": Revocation(owner="orders-2", generation=7)},
)


def test_status_rows_count_roles_and_lag_and_name_pods_that_are_gone() -> None:
    pods = [pod(0, node="n-a"), pod(1, leaving="2026-11-22T02:59:00Z", node="n-b")]
    metrics = {"orders-1": PodMetrics(lags={"0_0": 5, "0_1": 900})}
    rows = pod_rows(pods, PUBLISHED, metrics, {"n-a": "zone-a", "n-b": "zone-b"})
    assert [(r.pod, r.actives, r.standbys, r.warmups, r.lag, r.zone, r.leaving) for r in rows] == [
        ("orders-0", 2, 1, 0, None, "zone-a", "-"),
        ("orders-1", 1, 1, 1, 905, "zone-b", "since 2026-11-22T02:59:00Z"),
        ("orders-2", 0, 0, 0, None, "-", "gone"),
    ]
    table = render(rows)
    assert table[0].split() == ["POD", "READY", "ACTIVE", "STANDBY", "WARMUP", "LAG", "ZONE", "LEAVING"]
    assert table[3].split() == ["orders-2", "no", "0", "0", "0", "-", "-", "gone"]


def test_the_summary_gives_the_next_probe_and_why() -> None:
    status = {
        "phase": "Migrating",
        "probing": {"nextProbeTime": "2026-11-22T03:01:00Z", "reason": "2 warmups restoring"},
        "autoscaling": {"migrating": True, "recommendedReplicas": 4},
    }
    lines = summary("orders", status, PUBLISHED)
    assert "generation 7 (1 hand-over(s) in flight)" in lines[0]
    assert lines[2] == "migrating: yes; recommended replicas: 4"
    assert lines[3] == "next probe: 2026-11-22T03:01:00Z (2 warmups restoring)"
    assert summary("orders", {}, None)[3] == "next probe: none (the assignment is stable)"


def test_the_summary_gives_a_migrations_progress_and_eta() -> None:
    progress = {
        "startTime": "2026-11-22T03:00:00Z",
        "percent": 37.5,
        "copiesWarming": 1,
        "tasksQueued": 2,
        "activesRestoring": 0,
        "handoversPending": 0,
        "recordsRestored": 30000,
        "recordsLeft": 50000,
        "estimatedCompletionTime": "2026-11-22T03:00:40Z",
        "warmups": [
            {
                "task": "1_3",
                "pod": "orders-4",
                "recordsLeft": 10000,
                "restoreRate": 3900.0,
                "estimatedCompletionTime": "2026-11-22T03:00:13Z",
            }
        ],
    }
    lines = summary("orders", {"phase": "Migrating", "progress": progress}, PUBLISHED)
    assert lines[3] == (
        "progress: 37.5% since 2026-11-22T03:00:00Z, 30000 records restored, 50000 left; 1 warming, 2 queued "
        "behind the warmup cap, 0 active(s) restoring, 0 hand-over(s); ETA 2026-11-22T03:00:40Z"
    )
    assert lines[4] == "  warming 1_3 on orders-4: 10000 records left at 3900/s, ETA 2026-11-22T03:00:13Z"
    warmup = {"task": "1_3", "pod": "orders-4", "recordsLeft": 10000}
    unmeasured = {**progress, "estimatedCompletionTime": None, "warmups": [warmup]}
    lines = summary("orders", {"progress": unmeasured}, PUBLISHED)
    assert lines[3].endswith("ETA not yet (no restore rate measured)")
    assert lines[4] == "  warming 1_3 on orders-4: 10000 records left"


AROUND = "planned as the operator plans around a pod it cannot scrape"


def test_explain_names_the_published_roles_the_hand_over_and_the_plans_reason() -> None:
    spec = load_spec(
        {
            "replicas": 3,
            "template": {"spec": {"containers": [{"name": "app", "image": "orders:1"}]}},
            "topology": {"subtopologies": [{"name": "0", "partitions": 4, "inputTopics": ["in"]}]},
            "assignment": {"numStandbys": 1, "acceptableRecoveryLag": 100},
        }
    )
    pods = [pod(0), pod(1), pod(2)]
    lags = {
        "orders-0": PodMetrics(lags={"0_0": 0, "0_1": 0, "0_2": 0}),
        "orders-2": PodMetrics(lags={"0_3": 0}),
    }
    lags["orders-1"] = PodMetrics(lags={"0_2": 0, "0_0": 0, "0_1": 50_000})
    plan = replan(observation("orders", spec, pods, {}, PUBLISHED, lags, NOW)).plan
    lines = explain_lines("0_3", PUBLISHED, plan, ["orders-9"])
    assert lines[0] == "task 0_3 (generation 7): nowhere"
    assert lines[1] == "hand-over: revoked from orders-2 in generation 7, waiting for that pod to stop it"
    assert lines[3].startswith("why: ") and len(lines[3]) > len("why: ")
    assert lines[-1] == f"note: no metrics from orders-9 from here, {AROUND}"


def test_explain_decides_about_a_pod_it_cannot_scrape_as_the_operator_does() -> None:
    """A pod holding tasks whose metrics the command cannot reach is not a pod reporting lag 0: the
    operator's step holds planning for it, and the command says so, naming the pod."""
    spec = load_spec(
        {
            "replicas": 3,
            "template": {"spec": {"containers": [{"name": "app", "image": "orders:1"}]}},
            "topology": {"subtopologies": [{"name": "0", "partitions": 4, "inputTopics": ["in"]}]},
        }
    )
    results = {
        "orders-0": PodMetrics(lags={"0_0": 0, "0_1": 0, "0_2": 0}, generation=7),
        "orders-1": ScrapeFailure(FailureReason.UNREACHABLE, "GET http://10.0.0.2:8080/metrics: timed out"),
        "orders-2": PodMetrics(lags={"0_3": 0}, generation=7),
    }
    with pytest.raises(NoPlan, match=r"the operator would not plan now: .*orders-1"):
        replan(observation("orders", spec, [pod(0), pod(1), pod(2)], {}, PUBLISHED, results, NOW))
