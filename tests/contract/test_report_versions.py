"""Versioned pod reports (issue 34): the client library states the contract version its metrics follow, the
operator reads metrics it does not know as nothing, a pod without a version as version 1, and refuses only
a pod of a newer version, naming both versions and what to upgrade (the bridge: ContractMetricsTest)."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from smoothscale.client.metrics import TaskMetrics
from smoothscale.contract import shared_names as contract
from smoothscale.contract.version import CONTRACT_VERSION
from smoothscale.control.exposition import InvalidMetricsError, parse_metrics
from smoothscale.resource import MetricNames

NAMES = MetricNames()
REPORT = f'{contract.TASK_LAG_METRIC}{{task="0_1"}} 3\n{contract.GENERATION_METRIC} 4\n'
UNKNOWN_METRICS = st.from_regex(r"smoothscale_[a-z]{1,8}_later", fullmatch=True).filter(
    lambda name: name != contract.CONTRACT_VERSION_METRIC
)


def test_the_client_librarys_report_states_the_contract_version() -> None:
    metrics = TaskMetrics()
    metrics.set_task("0_1", lag=3, end_offset=10)
    text = metrics.render().decode()
    assert f"{contract.CONTRACT_VERSION_METRIC} {CONTRACT_VERSION}.0" in text
    assert parse_metrics(text, NAMES).lags == {"0_1": 3}


def test_a_report_without_a_version_is_version_1_and_read() -> None:
    read = parse_metrics(REPORT, NAMES)
    assert read.lags == {"0_1": 3} and read.generation == 4


@given(names=st.lists(UNKNOWN_METRICS, max_size=4), value=st.floats(allow_nan=True))
def test_metrics_the_operator_does_not_know_are_ignored(names: list[str], value: float) -> None:
    later = "".join(f'{name}{{pod="x"}} {value}\n' for name in names)
    text = f"{contract.CONTRACT_VERSION_METRIC} {CONTRACT_VERSION}\n{later}{REPORT}"
    assert parse_metrics(text, NAMES) == parse_metrics(REPORT, NAMES)


@pytest.mark.parametrize("extra", ["", f'{contract.TASK_LAG_METRIC}{{task="0_2"}} -1\n'])
def test_a_pod_of_a_newer_version_is_refused_naming_both_versions_and_what_to_upgrade(extra: str) -> None:
    """Also when a metric fails the checks: a newer contract may have changed what it means."""
    newer = CONTRACT_VERSION + 1
    with pytest.raises(InvalidMetricsError) as refused:
        parse_metrics(f"{REPORT}{extra}{contract.CONTRACT_VERSION_METRIC} {newer}\n", NAMES)
    message = str(refused.value)
    assert f"contract version {newer}" in message
    assert f"versions up to {CONTRACT_VERSION}" in message
    assert "upgrade the smoothscale operator" in message
