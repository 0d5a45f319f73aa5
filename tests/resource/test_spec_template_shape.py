"""Regression (found by tests/fuzz/test_fuzz_spec.py): a template whose env, containers, volumes, labels or
security contexts are not of their Kubernetes shape passed both the CRD schema (the template preserves
unknown fields) and `spec_problems`, then crashed `build_pod` with a TypeError. It is now an `InvalidSpec`
problem naming the field."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from smoothscale.resource import spec_problems

CONTAINER = {"name": "app", "image": "example/app:1"}
POD = "spec.template.spec"


def _spec(pod_spec: dict[str, Any], metadata: dict[str, Any] | None = None) -> dict[str, Any]:
    return {
        "template": {"metadata": metadata or {}, "spec": pod_spec},
        "topology": {"subtopologies": [{"name": "0", "partitions": 4}]},
    }


@pytest.mark.parametrize(
    ("pod_spec", "metadata", "field"),
    [
        ({"containers": [dict(CONTAINER, env=[None])]}, None, f"{POD}.containers[0].env[0]"),
        (
            {"containers": [dict(CONTAINER, env=[{"name": []}])]},
            None,
            f"{POD}.containers[0].env[0]",
        ),
        ({"containers": [dict(CONTAINER, env={"A": "1"})]}, None, f"{POD}.containers[0].env"),
        ({"containers": [CONTAINER], "initContainers": [7]}, None, f"{POD}.initContainers[0]"),
        ({"containers": [CONTAINER], "volumes": "data"}, None, f"{POD}.volumes"),
        (
            {"containers": [CONTAINER], "securityContext": ["privileged"]},
            None,
            f"{POD}.securityContext",
        ),
        (
            {"containers": [dict(CONTAINER, securityContext="privileged")]},
            None,
            f"{POD}.containers[0].securityContext",
        ),
        ({"containers": [CONTAINER]}, {"labels": ["team"]}, "spec.template.metadata.labels"),
        ({"containers": [CONTAINER]}, {"annotations": {"a": 1}}, "spec.template.metadata.annotations"),
    ],
)
def test_a_template_the_operator_cannot_build_pods_from_is_a_named_problem(
    pod_spec: dict[str, Any], metadata: dict[str, Any] | None, field: str
) -> None:
    problems = spec_problems(_spec(copy.deepcopy(pod_spec), metadata))
    assert any(problem.startswith(f"{field}:") for problem in problems), problems


def test_a_well_formed_template_has_no_problem() -> None:
    pod_spec = {
        "containers": [dict(CONTAINER, env=[{"name": "A", "value": "1"}], securityContext={})],
        "initContainers": [dict(CONTAINER, name="init")],
        "volumes": [{"name": "cache", "emptyDir": {}}],
        "securityContext": {"runAsUser": 1000},
    }
    assert spec_problems(_spec(pod_spec, {"labels": {"team": "a"}, "annotations": {}})) == []
