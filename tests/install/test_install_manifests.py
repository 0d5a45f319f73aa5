"""Every rendered manifest and every example is valid for the Kubernetes versions the chart supports."""

from __future__ import annotations

import copy
from pathlib import Path

import pytest
from install_testkit import (
    EXAMPLES,
    THIRD_PARTY_KINDS,
    Json,
    kubernetes_versions,
    load_documents,
    one,
    validation_errors,
)

VERSIONS = kubernetes_versions()


@pytest.mark.parametrize("version", VERSIONS)
def test_rendered_manifests_are_valid(rendered: dict[str, list[Json]], version: str) -> None:
    errors = [
        f"{name}: {doc['kind']}/{doc['metadata']['name']}{error}"
        for name, documents in rendered.items()
        for doc in documents
        for error in validation_errors(doc, version)
    ]
    assert errors == []


@pytest.mark.parametrize("version", VERSIONS)
@pytest.mark.parametrize("example", EXAMPLES, ids=lambda p: p.name)
def test_examples_are_valid(example: Path, version: str) -> None:
    for doc in load_documents(example):
        assert validation_errors(doc, version) == [], doc["kind"]


def test_validation_is_not_vacuous(rendered: dict[str, list[Json]]) -> None:
    """A misspelt field fails for a built-in kind, for a kind of our CRDs, and an unknown kind fails too."""
    version = VERSIONS[0]
    deployment = copy.deepcopy(one(rendered["default"], "Deployment"))
    deployment["spec"]["replica"] = 2
    assert validation_errors(deployment, version)
    (app,) = load_documents(Path(EXAMPLES[0]).with_name("streamsapp.yaml"))
    app["spec"]["replicas"] = "three"
    app["spec"]["topology"]["subtopologies"][0]["partitons"] = 3
    assert len(validation_errors(app, version)) == 2
    unknown = {"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "w"}}
    assert validation_errors(unknown, version)


def test_every_kind_is_checked_or_listed(rendered: dict[str, list[Json]]) -> None:
    """Only the listed third-party kinds go without a schema; the rendered chart uses the ServiceMonitor."""
    kinds = {(d["apiVersion"], d["kind"]) for docs in rendered.values() for d in docs}
    kinds |= {(d["apiVersion"], d["kind"]) for path in EXAMPLES for d in load_documents(path)}
    assert set(THIRD_PARTY_KINDS) <= kinds


@pytest.mark.parametrize("example", ["hpa.yaml", "keda-scaledobject.yaml"])
def test_autoscalers_target_the_example_app(example: str) -> None:
    """HPA and KEDA reach the app through its scale subresource: same namespace, the StreamsApp's name."""
    folder = EXAMPLES[0].parent
    (app,) = load_documents(folder / "streamsapp.yaml")
    (scaler,) = load_documents(folder / example)
    assert scaler["metadata"]["namespace"] == app["metadata"]["namespace"]
    target = scaler["spec"]["scaleTargetRef"]
    assert target == {"apiVersion": app["apiVersion"], "kind": app["kind"], "name": app["metadata"]["name"]}
    bounds = scaler["spec"].get("minReplicas", scaler["spec"].get("minReplicaCount"))
    assert bounds == app["spec"]["replicas"]
