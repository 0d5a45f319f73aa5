"""The chart's CRD on a real kube-apiserver: accepted, defaulted, its CEL rules enforced with their messages.

The server refused the CRD at first: it checks each section's `default: {}` against the section's CEL rules
(without the inner defaults), and the rules read fields that are then absent. The session fixture applies
the CRD, so every test here fails if the server refuses it.

The emulator stores whatever it is sent; a real API server prunes, defaults and validates by the CRD's
structural schema and evaluates its `x-kubernetes-validations` (CEL) rules, within a cost budget it checks
when the CRD is applied. The operator's own validation (`resource.validation`) must agree with what the
server refuses, since the operator also runs on the emulator.
"""

from __future__ import annotations

import copy
from typing import Any

import pytest
from realkube_kit import CRD, FIELD_MANAGER, GROUP, PLURAL, Cluster, Json

from smoothscale.resource import load_spec
from smoothscale.resource.validation import spec_problems


def minimal_app(name: str = "orders") -> Json:
    return {
        "apiVersion": f"{GROUP}/v1alpha1",
        "kind": "StreamsApp",
        "metadata": {"name": name},
        "spec": {
            "template": {"spec": {"containers": [{"name": "app", "image": "example/orders:1"}]}},
            "topology": {"subtopologies": [{"name": "0", "partitions": 4, "inputTopics": ["orders"]}]},
        },
    }


def with_spec(**sections: Any) -> Json:
    app = minimal_app()
    for section, value in sections.items():
        app["spec"][section] = value
    return app


def test_the_crd_is_established_and_a_second_server_side_apply_changes_nothing(cluster: Cluster) -> None:
    before = cluster.control_plane.kubectl("get", f"crd/{PLURAL}.{GROUP}", "-o", "json").stdout
    again = cluster.control_plane.kubectl(
        "apply", "--server-side", f"--field-manager={FIELD_MANAGER}", "-f", str(CRD)
    )
    assert "serverside-applied" in again.stdout
    status, crd = cluster.request(
        "GET", f"/apis/apiextensions.k8s.io/v1/customresourcedefinitions/{PLURAL}.{GROUP}"
    )
    assert status == 200
    assert crd["metadata"]["resourceVersion"] == _resource_version(before)
    conditions = {c["type"]: c["status"] for c in crd["status"]["conditions"]}
    assert conditions["Established"] == "True"
    assert conditions["NamesAccepted"] == "True"
    assert crd["status"]["acceptedNames"]["shortNames"] == ["sapp"]
    managers = {entry["manager"]: entry["operation"] for entry in crd["metadata"]["managedFields"]}
    assert managers[FIELD_MANAGER] == "Apply"


def _resource_version(crd_json: str) -> str:
    import json  # noqa: PLC0415

    version: str = json.loads(crd_json)["metadata"]["resourceVersion"]
    return version


def test_the_server_fills_in_the_schema_defaults(cluster: Cluster) -> None:
    status, created = cluster.create_app(minimal_app())
    assert status == 201, created
    spec = created["spec"]
    assert spec["replicas"] == 1
    assert spec["assignment"]["numStandbys"] == 0
    assert spec["assignment"]["probingInterval"] == "10m"
    assert spec["assignment"]["rackAware"]["strategy"] == "balance_subtopology"
    assert spec["scaling"] == {"updateStrategy": "Swap", "maxSurge": "100%"}
    assert "port" not in spec["metrics"]  # the runtime's own (8080, or the bridge's 9494): the operator's
    assert load_spec(spec).metrics.port == 8080  # ... default, not the schema's
    assert spec["topology"]["subtopologies"][0]["stateful"] is True
    assert spec["topology"]["subtopologies"][0]["weight"] == 1.0
    # and the operator reads the defaulted spec as it reads one that spelt every default out
    assert spec_problems(spec) == []


def test_fields_the_schema_does_not_know_are_refused_by_strict_field_validation(cluster: Cluster) -> None:
    app = minimal_app()
    app["spec"]["replicass"] = 3
    status, answer = cluster.request(
        "POST",
        cluster.app_path(),
        {**app, "metadata": {"name": "orders", "namespace": cluster.namespace}},
        query={"fieldValidation": "Strict"},
    )
    assert status == 400, answer
    assert 'unknown field "spec.replicass"' in answer["message"]
    assert spec_problems(app["spec"]) != []


REJECTED = {
    "probing interval below 1s": (
        {"assignment": {"probingInterval": "500ms"}},
        "spec.assignment.probingInterval",
        "probingInterval must be at least 1s",
    ),
    "no surge for a swap": (
        {"scaling": {"updateStrategy": "Swap", "maxSurge": 0}},
        "spec.scaling.maxSurge",
        "maxSurge must allow at least one extra pod when updateStrategy is Swap",
    ),
    "a zero percentage of surge for a swap": (
        {"scaling": {"updateStrategy": "Swap", "maxSurge": "0%"}},
        "spec.scaling.maxSurge",
        "maxSurge must allow at least one extra pod when updateStrategy is Swap",
    ),
    "surge neither a count nor a percentage": (
        {"scaling": {"updateStrategy": "RollingRestart", "maxSurge": "half"}},
        "spec.scaling.maxSurge",
        "must be a non-negative number of pods or a percentage such as 25%",
    ),
}


@pytest.mark.parametrize("sections, field, message", REJECTED.values(), ids=REJECTED.keys())
def test_a_rule_broken_is_refused_with_the_rules_message(
    cluster: Cluster, sections: Json, field: str, message: str
) -> None:
    app = with_spec(**copy.deepcopy(sections))
    status, answer = cluster.create_app(app)
    assert status == 422, answer
    assert answer["reason"] == "Invalid"
    causes = {
        (cause.get("field"), cause["message"].split(": ", 1)[-1]) for cause in answer["details"]["causes"]
    }
    assert any(cause_field == field and message in text for cause_field, text in causes), causes
    assert cluster.request("GET", cluster.app_path("orders"))[0] == 404  # nothing stored
    # the operator, which cannot count on a server (the emulator validates nothing), refuses it too
    problems = spec_problems(app["spec"])
    assert any(problem.startswith(field) for problem in problems), problems


def test_a_valid_change_that_breaks_a_rule_on_update_is_refused_and_the_object_kept(cluster: Cluster) -> None:
    assert cluster.create_app(minimal_app())[0] == 201
    status, answer = cluster.request(
        "PATCH",
        cluster.app_path("orders"),
        {"spec": {"assignment": {"probingInterval": "10ms"}}},
        content_type="application/merge-patch+json",
    )
    assert status == 422
    assert "probingInterval must be at least 1s" in answer["message"]
    assert cluster.app("orders")["spec"]["assignment"]["probingInterval"] == "10m"


def test_kubectl_scale_goes_through_the_scale_subresource(cluster: Cluster) -> None:
    assert cluster.create_app(minimal_app())[0] == 201
    selector = "app.kubernetes.io/instance=orders"
    status, _ = cluster.request(
        "PATCH",
        cluster.app_path("orders", "status"),
        {"status": {"replicas": 1, "selector": selector}},
        content_type="application/merge-patch+json",
    )
    assert status == 200
    cluster.kubectl("scale", "sapp/orders", "--replicas=4")
    status, scale = cluster.request("GET", cluster.app_path("orders", "scale"))
    assert status == 200
    assert scale["kind"] == "Scale" and scale["apiVersion"] == "autoscaling/v1"
    assert scale["spec"] == {"replicas": 4}
    assert scale["status"] == {"replicas": 1, "selector": selector}
    assert cluster.app("orders")["spec"]["replicas"] == 4
    refused = cluster.kubectl("scale", "sapp/orders", "--replicas=-1", check=False)
    assert refused.returncode != 0
