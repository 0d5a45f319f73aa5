"""`control.loadsignal`: a round's Contract 3 metrics as the autoscaler's sample; the new metrics parsed."""

from __future__ import annotations

import pytest

from smoothscale.contract.publication import ClientAssignment, Publication
from smoothscale.control.exposition import InvalidMetricsError, parse_metrics
from smoothscale.control.loadsignal import LoadSignal
from smoothscale.control.observed import PodMetrics
from smoothscale.resource import MetricNames

PUBLISHED = Publication(
    generation=3,
    assignment={
        "orders-0": ClientAssignment(active=["0_0", "0_1"]),
        "orders-1": ClientAssignment(active=["0_2"], warmup=["0_1"]),
    },
)
SIZES = {"0_0": 1_000_000, "0_1": 1_000_000, "0_2": 1_000_000, "0_3": 0}


def _round(lags: int, input_lag: int) -> dict[str, PodMetrics]:
    return {
        "orders-0": PodMetrics(
            process_rates={"0_0": 300.0, "0_1": 200.0}, input_lags={"0_0": input_lag}, busy_ratio=0.25
        ),
        "orders-1": PodMetrics(
            process_rates={"0_2": 100.0, "0_1": 999.0}, lags={"0_1": lags}, busy_ratio=None
        ),
    }


def test_a_rounds_metrics_as_the_autoscalers_sample() -> None:
    first, signal = LoadSignal().sample(100.0, 2, _round(800_000, 1_000), PUBLISHED, SIZES, 2, True)
    # processed counts each pod's active tasks only (orders-1's warmup of 0_1 processes nothing)
    assert first.pods["orders-0"].processed == 500.0 and first.pods["orders-0"].busy == 0.25
    assert first.pods["orders-1"].processed == 100.0 and first.pods["orders-1"].busy is None
    assert first.backlog == 1_000 and first.input_rate == 600.0 and first.restore_rate is None
    assert first.tasks == 4 and first.state_per_task == 750_000 and first.migrating
    second, _ = signal.sample(110.0, 2, _round(300_000, 3_000), PUBLISHED, SIZES, 2, False)
    # the backlog grew by 2,000 in 10 s: 200 records/s arrive beyond the 600 processed
    assert second.input_rate == pytest.approx(800.0)
    assert second.restore_rate == pytest.approx(50_000.0)  # the warmup's lag fell by 500,000 in 10 s


def test_busy_ratio_and_input_lag_are_scraped() -> None:
    text = 'smoothscale_pod_busy_ratio 0.4\nsmoothscale_task_input_lag{task="0_0"} 12\n'
    metrics = parse_metrics(text, MetricNames())
    assert metrics.busy_ratio == 0.4 and metrics.input_lags == {"0_0": 12}
    assert parse_metrics("", MetricNames()).busy_ratio is None
    with pytest.raises(InvalidMetricsError):
        parse_metrics("smoothscale_pod_busy_ratio -1", MetricNames())
