"""`examples/kafka-streams-app.yaml` is a complete StreamsApp for a Java app with the bridge: the pods run as
a ServiceAccount whose Role reads the app's assignment ConfigMap, as the bridge needs, and nothing else, and
the operator scrapes the port the bridge serves. (tests/install validates its schema; tests/realkube runs
the bridge as a ServiceAccount bound to the same Role.)"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import yaml

from smoothscale.contract import shared_names as contract
from smoothscale.resource import Runtime
from smoothscale.resource.spec import StreamsAppSpec

ROOT = Path(__file__).parents[2]
EXAMPLE = ROOT / "examples" / "kafka-streams-app.yaml"
SETTINGS = ROOT / "bridge/smoothscale-streams/src/main/java/io/smoothscale/streams/BridgeSettings.java"


def bridge_default_metrics_port() -> int:
    """`BridgeSettings.DEFAULT_METRICS_PORT`, read from the Java source."""
    found = re.search(r"DEFAULT_METRICS_PORT = (\d+);", SETTINGS.read_text())
    assert found, f"no DEFAULT_METRICS_PORT in {SETTINGS}"
    return int(found.group(1))


def documents() -> dict[str, dict[str, Any]]:
    return {doc["kind"]: doc for doc in yaml.safe_load_all(EXAMPLE.read_text())}


def test_the_pods_service_account_may_read_the_apps_assignment_configmap_and_nothing_else() -> None:
    docs = documents()
    app = docs["StreamsApp"]
    name, namespace = app["metadata"]["name"], app["metadata"]["namespace"]
    account = app["spec"]["template"]["spec"]["serviceAccountName"]
    assert docs["ServiceAccount"]["metadata"] == {"name": account, "namespace": namespace}
    assert docs["Role"]["rules"] == [
        {
            "apiGroups": [""],
            "resources": ["configmaps"],
            "resourceNames": [contract.assignment_configmap(name)],
            "verbs": ["get", "list", "watch"],
        }
    ]
    binding = docs["RoleBinding"]
    assert binding["roleRef"]["name"] == docs["Role"]["metadata"]["name"]
    assert binding["subjects"] == [{"kind": "ServiceAccount", "name": account, "namespace": namespace}]
    assert {doc["metadata"]["namespace"] for doc in docs.values()} == {namespace}


def test_the_operator_scrapes_where_the_bridge_serves() -> None:
    app = documents()["StreamsApp"]
    spec = StreamsAppSpec.model_validate(app["spec"])
    assert spec.runtime == Runtime.KAFKA_STREAMS
    port = bridge_default_metrics_port()
    assert (spec.metrics.port, spec.metrics.path) == (port, "/metrics")
    (container,) = app["spec"]["template"]["spec"]["containers"]
    assert {"name": "metrics", "containerPort": port} in container["ports"]
