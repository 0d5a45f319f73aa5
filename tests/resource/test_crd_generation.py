"""The generated CRD: checked in and current, the right names and subresources, usable printer columns."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import yaml
from click.testing import CliRunner

from smoothscale.cli.main import cli
from smoothscale.resource.crd import REGENERATE_COMMAND, crd_yaml

Json = dict[str, Any]


def test_checked_in_crd_is_current(checked_in_crd: Path) -> None:
    assert checked_in_crd.exists(), f"crds/streamsapp.yaml is missing: run `{REGENERATE_COMMAND}`"
    assert checked_in_crd.read_text(encoding="utf-8") == crd_yaml(), (
        f"crds/streamsapp.yaml is stale (the resource models changed): run `{REGENERATE_COMMAND}`"
    )


def test_generation_is_deterministic() -> None:
    assert crd_yaml() == crd_yaml()


def test_yaml_is_the_object(crd: Json) -> None:
    assert yaml.safe_load(crd_yaml()) == crd


def test_identity(crd: Json) -> None:
    assert crd["apiVersion"] == "apiextensions.k8s.io/v1"
    assert crd["kind"] == "CustomResourceDefinition"
    assert crd["metadata"]["name"] == "streamsapps.smoothscale.io"
    spec = crd["spec"]
    assert spec["group"] == "smoothscale.io"
    assert spec["scope"] == "Namespaced"
    assert spec["names"] == {
        "kind": "StreamsApp",
        "listKind": "StreamsAppList",
        "plural": "streamsapps",
        "singular": "streamsapp",
        "shortNames": ["sapp"],
        "categories": ["all", "smoothscale"],
    }
    (version,) = spec["versions"]
    assert (version["name"], version["served"], version["storage"]) == ("v1alpha1", True, True)


def test_status_and_scale_subresources(crd: Json) -> None:
    assert crd["spec"]["versions"][0]["subresources"] == {
        "status": {},
        "scale": {
            "specReplicasPath": ".spec.replicas",
            "statusReplicasPath": ".status.replicas",
            "labelSelectorPath": ".status.selector",
        },
    }


def test_printer_columns(crd: Json) -> None:
    columns = {c["name"]: c for c in crd["spec"]["versions"][0]["additionalPrinterColumns"]}
    wanted = {
        "Replicas": ".spec.replicas",
        "Ready": ".status.readyReplicas",
        "Stable": '.status.conditions[?(@.type=="Stable")].status',
        "Warmups": ".status.assignment.warmupTasks",
        "Lag": ".status.lag.total",
        "Age": ".metadata.creationTimestamp",
    }
    for name, path in wanted.items():
        assert columns[name]["jsonPath"] == path
    assert columns["Age"]["type"] == "date"
    shown_by_default = [c for c in columns.values() if c.get("priority", 0) == 0]
    assert [c["name"] for c in shown_by_default] == ["Replicas", "Ready", "Stable", "Warmups", "Lag", "Age"]


def test_printer_columns_point_at_fields_of_their_type(crd: Json, root_schema: Json) -> None:
    """A column whose path names no field (after a rename) would silently show nothing."""
    for column in crd["spec"]["versions"][0]["additionalPrinterColumns"]:
        path = re.sub(r"\[\?\(@\.type==\"\w+\"\)\]", "[]", column["jsonPath"])
        if path == ".metadata.creationTimestamp":
            continue
        node = root_schema
        for part in path.strip(".").split("."):
            node = node["properties"][part.removesuffix("[]")]
            if part.endswith("[]"):
                node = node["items"]
        assert node["type"] == column["type"], column["name"]


def test_cli_prints_the_crd() -> None:
    result = CliRunner().invoke(cli, ["crd"])
    assert result.exit_code == 0, result.output
    assert result.stdout == crd_yaml()


def test_cli_writes_the_crd(tmp_path: Path) -> None:
    target = tmp_path / "out" / "streamsapp.yaml"
    result = CliRunner().invoke(cli, ["crd", "--output", str(target)])
    assert result.exit_code == 0, result.output
    assert target.read_text(encoding="utf-8") == crd_yaml()
