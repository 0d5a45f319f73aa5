"""The client library's copy of Contract 3's names must match the operator's (it may not import them)."""

from __future__ import annotations

from smoothscale.client import contract
from smoothscale.operator.control import names, zones
from smoothscale.operator.resource.spec import MetricNames, MetricsSpec


def test_metric_names_and_endpoint_match_the_streamsapp_defaults() -> None:
    names = MetricNames()
    assert (names.task_lag, names.changelog_end_offset, names.assignment_generation) == (
        contract.TASK_LAG_METRIC,
        contract.CHANGELOG_END_OFFSET_METRIC,
        contract.GENERATION_METRIC,
    )
    assert (MetricsSpec().port, MetricsSpec().path) == (
        contract.DEFAULT_METRICS_PORT,
        contract.DEFAULT_METRICS_PATH,
    )


def test_labels_annotations_keys_and_environment_match_the_operator() -> None:
    shared = [
        "ASSIGNMENT_KEY",
        "GENERATION_KEY",
        "APP_LABEL",
        "LEAVING_ANNOTATION",
        "STATE_VOLUME",
        "POD_NAME_ENV",
        "NAMESPACE_ENV",
        "APP_ENV",
        "ASSIGNMENT_CONFIGMAP_ENV",
    ]
    assert {name: getattr(contract, name) for name in shared} == {
        name: getattr(names, name) for name in shared
    }
    assert contract.ZONE_LABEL == zones.ZONE_LABEL
    assert contract.assignment_configmap("orders") == names.assignment_configmap("orders")
