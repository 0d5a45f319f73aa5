"""The Helm chart: lints strictly, documents every value, renders a safe, consistent operator Deployment."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import yaml
from install_testkit import (
    CHART,
    RELEASE_NAMESPACE,
    ROOT,
    VALUE_SETS,
    Json,
    helm,
    load_documents,
    of_kind,
    one,
    operator_options,
    render,
    render_notes,
)


@pytest.mark.parametrize("values", VALUE_SETS, ids=lambda p: p.name)
def test_helm_lint_strict(values: Path) -> None:
    result = helm("lint", "--strict", str(CHART), "--values", str(values), check=False)
    assert result.returncode == 0, result.stdout + result.stderr


def test_every_value_is_documented() -> None:
    """Each key of values.yaml has a comment right above it: values.yaml is the chart's reference."""
    lines = (CHART / "values.yaml").read_text(encoding="utf-8").splitlines()
    undocumented = [
        line.strip()
        for above, line in zip(["", *lines], lines, strict=False)
        if re.match(r"^\s*[\w.-]+:", line) and not above.strip().startswith("#")
    ]
    assert undocumented == []


def test_deployment_arguments_areoperator_options(rendered: dict[str, list[Json]]) -> None:
    default = operator_options(rendered["default"])
    assert default["standalone"] is True and default["namespaces"] == ()
    namespaced = operator_options(rendered["namespaced"])
    assert namespaced["namespaces"] == ("team-a", "team-b")
    assert namespaced["standalone"] is False and namespaced["peering"] == "smoothscale"


def test_security_context_and_resources(rendered: dict[str, list[Json]]) -> None:
    for documents in rendered.values():
        pod = one(documents, "Deployment")["spec"]["template"]["spec"]
        (container,) = pod["containers"]
        assert pod["securityContext"]["runAsNonRoot"] is True
        assert pod["securityContext"]["runAsUser"] != 0
        assert pod["securityContext"]["seccompProfile"] == {"type": "RuntimeDefault"}
        security = container["securityContext"]
        assert security["allowPrivilegeEscalation"] is False
        assert security["readOnlyRootFilesystem"] is True
        assert security["capabilities"] == {"drop": ["ALL"]}
        assert container["resources"]["requests"] and container["resources"]["limits"]["memory"]
        assert {"name": "tmp", "mountPath": "/tmp"} in container["volumeMounts"]


def test_probes_ask_the_operators_health_endpoint(rendered: dict[str, list[Json]]) -> None:
    documents = rendered["default"]
    (container,) = one(documents, "Deployment")["spec"]["template"]["spec"]["containers"]
    ports = {port["name"]: port["containerPort"] for port in container["ports"]}
    liveness = operator_options(documents)["liveness"]
    for probe in (container["livenessProbe"], container["readinessProbe"]):
        url = f"http://0.0.0.0:{ports[probe['httpGet']['port']]}{probe['httpGet']['path']}"
        assert url == liveness
    assert operator_options(documents)["metrics_port"] == ports["metrics"]


def test_one_replica_runs_standalone_and_is_never_doubled(rendered: dict[str, list[Json]]) -> None:
    documents = rendered["default"]
    deployment = one(documents, "Deployment")
    assert deployment["spec"]["replicas"] == 1
    assert deployment["spec"]["strategy"] == {"type": "Recreate"}
    assert not of_kind(documents, "ClusterKopfPeering") and not of_kind(documents, "KopfPeering")


def test_replicas_peer_in_the_objects_the_chart_creates(rendered: dict[str, list[Json]]) -> None:
    cluster_wide = rendered["ha"]
    peering = operator_options(cluster_wide)["peering"]
    assert one(cluster_wide, "ClusterKopfPeering")["metadata"]["name"] == peering
    assert one(cluster_wide, "Deployment")["spec"]["strategy"]["type"] == "RollingUpdate"
    namespaced = rendered["namespaced"]
    peerings = {
        (p["metadata"]["namespace"], p["metadata"]["name"]) for p in of_kind(namespaced, "KopfPeering")
    }
    assert peerings == {(ns, operator_options(namespaced)["peering"]) for ns in ("team-a", "team-b")}


def test_service_monitor_scrapes_the_metrics_service(rendered: dict[str, list[Json]]) -> None:
    """The ServiceMonitor's schema is not checked (a third-party kind): check what it selects instead."""
    documents = rendered["ha"]
    service = one(documents, "Service")
    monitor = one(documents, "ServiceMonitor")
    selector = monitor["spec"]["selector"]["matchLabels"]
    assert selector.items() <= service["metadata"]["labels"].items()
    assert monitor["spec"]["namespaceSelector"] == {"matchNames": [RELEASE_NAMESPACE]}
    (endpoint,) = monitor["spec"]["endpoints"]
    assert endpoint["port"] in {port["name"] for port in service["spec"]["ports"]}
    assert endpoint["path"] == "/metrics"
    assert service["spec"]["selector"].items() <= (
        one(documents, "Deployment")["spec"]["template"]["metadata"]["labels"].items()
    )
    assert not of_kind(rendered["default"], "ServiceMonitor")


def test_existing_service_account_is_used_and_bound(rendered: dict[str, list[Json]]) -> None:
    documents = rendered["ha"]
    assert not of_kind(documents, "ServiceAccount")
    pod = one(documents, "Deployment")["spec"]["template"]["spec"]
    assert pod["serviceAccountName"] == "platform-operators"
    subjects = one(documents, "ClusterRoleBinding")["subjects"]
    assert subjects == [
        {"kind": "ServiceAccount", "name": "platform-operators", "namespace": RELEASE_NAMESPACE}
    ]


def test_notes_tell_what_to_do_next() -> None:
    default = render_notes(CHART / "ci" / "default-values.yaml")
    assert f"kubectl -n {RELEASE_NAMESPACE} rollout status deployment/smoothscale" in default
    assert "kubectl apply -f examples/streamsapp.yaml" in default
    assert "kubectl get sapp -n streams -w" in default
    assert "kubectl scale sapp orders -n streams --replicas=6" in default
    assert "It serves StreamsApps in all namespaces." in default
    namespaced = render_notes(CHART / "ci" / "namespaced-values.yaml")
    assert "It serves StreamsApps in: team-a, team-b." in namespaced
    assert "2 replicas are peered" in namespaced
    assert "namespace: team-a/' examples/streamsapp.yaml | kubectl apply -f -" in namespaced
    assert "kubectl get sapp -n team-a -w" in namespaced
    assert "(scraped through the ServiceMonitor smoothscale)" in namespaced


def test_values_files_are_yaml_mappings() -> None:
    for path in [CHART / "values.yaml", *VALUE_SETS]:
        assert isinstance(yaml.safe_load(path.read_text(encoding="utf-8")) or {}, dict), path


def test_kafka_streams_apps_get_the_service_account_and_role_the_bridge_needs() -> None:
    """Each app in `kafkaStreamsApps` gets the ServiceAccount, Role and RoleBinding that
    `examples/kafka-streams-app.yaml` carries for its app (the objects the bridge needs), and nothing more."""
    example = load_documents(ROOT / "examples" / "kafka-streams-app.yaml")
    app = one(example, "StreamsApp")["metadata"]
    documents = render(
        None, f"kafkaStreamsApps[0].name={app['name']}", f"kafkaStreamsApps[0].namespace={app['namespace']}"
    )
    kinds = ("ServiceAccount", "Role", "RoleBinding")
    made = [
        doc
        for doc in documents
        if doc["kind"] in kinds and doc["metadata"].get("namespace") == app["namespace"]
    ]

    def essence(doc: Json) -> Json:
        return {key: value for key, value in doc.items() if key != "metadata"} | {
            "name": doc["metadata"]["name"],
            "namespace": doc["metadata"]["namespace"],
        }

    assert sorted(map(str, map(essence, made))) == sorted(
        str(essence(doc)) for doc in example if doc["kind"] in kinds
    )
    assert render(None) == [doc for doc in documents if doc not in made]
