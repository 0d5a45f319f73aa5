"""What `kubectl get` and `kubectl explain` read: Tables with the CRD's printer columns, and its schema.

tests/realkube/test_realkube_differential.py compares these answers with a real kube-apiserver's.
"""

from __future__ import annotations

from datetime import UTC, datetime

import aiohttp
import pytest

from smoothscale.sandbox.emulator.tables import human_age, json_path

TABLE = {"Accept": "application/json;as=Table;v=v1;g=meta.k8s.io,application/json"}
APPS = "/apis/smoothscale.io/v1alpha1/namespaces/default/streamsapps"
APP = {
    "apiVersion": "smoothscale.io/v1alpha1",
    "kind": "StreamsApp",
    "metadata": {"name": "orders"},
    "spec": {"replicas": 3, "template": {"spec": {"containers": [{"name": "app"}]}}},
}


@pytest.mark.parametrize(
    "seconds, age",
    [
        (5, "5s"),
        (119, "119s"),
        (150, "2m30s"),
        (600, "10m"),
        (4 * 3600 + 600, "4h10m"),
        (30 * 3600, "30h"),
        (3 * 86400 + 4 * 3600, "3d4h"),
    ],
)
def test_ages_are_written_as_kube_apiserver_writes_them(seconds: int, age: str) -> None:
    now = datetime(2026, 11, 24, 12, 0, 0, tzinfo=UTC)
    then = datetime.fromtimestamp(now.timestamp() - seconds, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    assert human_age(then, now) == age


def test_printer_column_paths_read_fields_and_filtered_lists() -> None:
    obj = {
        "status": {"conditions": [{"type": "Ready", "status": "False"}, {"type": "Stable", "status": "True"}]}
    }
    assert json_path(obj, '.status.conditions[?(@.type=="Stable")].status') == "True"
    assert json_path(obj, '.status.conditions[?(@.type=="Gone")].status') is None
    assert json_path(obj, ".spec.replicas") is None
    with pytest.raises(ValueError, match="unsupported printer column path"):
        json_path(obj, ".status.conditions[0]")


async def test_kubectl_get_receives_the_crds_printer_columns(api: aiohttp.ClientSession) -> None:
    async with api.post(APPS, json=APP) as response:
        assert response.status == 201
    status = {
        "status": {
            "readyReplicas": 2,
            "phase": "Running",
            "conditions": [{"type": "Stable", "status": "True"}],
        }
    }
    async with api.patch(
        f"{APPS}/orders/status", json=status, headers={"Content-Type": "application/merge-patch+json"}
    ) as response:
        assert response.status == 200
    async with api.get(APPS, headers=TABLE) as response:
        table = await response.json()
    assert table["kind"] == "Table"
    columns = [c["name"] for c in table["columnDefinitions"]]
    assert columns == ["Name", "Replicas", "Ready", "Stable", "Warmups", "Lag", "Phase", "Generation", "Age"]
    assert [c["priority"] for c in table["columnDefinitions"]][6:8] == [1, 1]  # shown by -o wide
    (row,) = table["rows"]
    assert row["cells"][:7] == ["orders", 3, 2, "True", None, None, "Running"]
    assert row["object"]["metadata"]["name"] == "orders"
    async with api.get(f"{APPS}/orders") as response:
        assert (await response.json())["kind"] == "StreamsApp"  # plain JSON unless a Table is asked for


async def test_kubectl_explain_finds_the_streamsapp_schema(api: aiohttp.ClientSession) -> None:
    async with api.get("/openapi/v3/apis/smoothscale.io/v1alpha1") as response:
        document = await response.json()
    (schema,) = document["components"]["schemas"].values()
    assert schema["x-kubernetes-group-version-kind"] == [
        {"group": "smoothscale.io", "version": "v1alpha1", "kind": "StreamsApp"}
    ]
    assert "scaling" in schema["properties"]["spec"]["properties"]
