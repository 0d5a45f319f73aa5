"""What kubectl-style clients need beyond CRUD: OpenAPI for validation, YAML bodies, dry runs."""

from __future__ import annotations

import aiohttp
import yaml
from emulator_testkit import MERGE, SAPPS, sapp


async def test_openapi_v3_declares_server_side_field_validation(api: aiohttp.ClientSession) -> None:
    index = await (await api.get("/openapi/v3")).json()
    assert (
        index["paths"]["apis/smoothscale.io/v1alpha1"]["serverRelativeURL"]
        == "/openapi/v3/apis/smoothscale.io/v1alpha1"
    )
    assert "api/v1" in index["paths"]
    document = await (await api.get("/openapi/v3/apis/smoothscale.io/v1alpha1")).json()
    # kubectl looks for a PATCH operation of the kind accepting `fieldValidation` (else it wants /openapi/v2).
    patch = document["paths"]["/apis/smoothscale.io/v1alpha1/namespaces/{namespace}/streamsapps/{name}"][
        "patch"
    ]
    assert patch["x-kubernetes-group-version-kind"] == {
        "group": "smoothscale.io",
        "version": "v1alpha1",
        "kind": "StreamsApp",
    }
    assert {"name": "fieldValidation", "in": "query", "schema": {"type": "string"}} in patch["parameters"]
    core = await (await api.get("/openapi/v3/api/v1")).json()
    assert "/api/v1/nodes/{name}" in core["paths"]
    assert (await api.get("/openapi/v3/apis/example.com/v1")).status == 404


async def test_yaml_bodies_are_accepted_and_protobuf_is_refused_clearly(api: aiohttp.ClientSession) -> None:
    created = await api.post(
        SAPPS, data=yaml.safe_dump(sapp("a")), headers={"Content-Type": "application/yaml"}
    )
    assert created.status == 201
    protobuf = await api.post(
        "/api/v1/namespaces",
        data=b"k8s\x00\n\x0f",
        headers={"Content-Type": "application/vnd.kubernetes.protobuf"},
    )
    assert protobuf.status == 415
    assert "protobuf" in (await protobuf.json())["message"]


async def test_dry_runs_store_nothing(api: aiohttp.ClientSession) -> None:
    dry = {"dryRun": "All"}
    created = await api.post(SAPPS, json=sapp("a"), params=dry)
    assert created.status == 201 and (await created.json())["metadata"]["uid"]
    assert (await api.get(f"{SAPPS}/a")).status == 404

    await api.post(SAPPS, json=sapp("a"))
    patched = await api.patch(f"{SAPPS}/a", json={"spec": {"replicas": 9}}, headers=MERGE, params=dry)
    assert (await patched.json())["spec"]["replicas"] == 9
    assert (await (await api.get(f"{SAPPS}/a")).json())["spec"]["replicas"] == 1
    assert (await api.delete(f"{SAPPS}/a", params=dry)).status == 200
    assert (await api.get(f"{SAPPS}/a")).status == 200


async def test_server_side_apply_creates_then_merges(api: aiohttp.ClientSession) -> None:
    apply = {"Content-Type": "application/apply-patch+yaml"}
    first = await api.patch(f"{SAPPS}/a", data=yaml.safe_dump(sapp("a", replicas=2)), headers=apply)
    assert first.status == 201
    second = await api.patch(f"{SAPPS}/a", data=yaml.safe_dump(sapp("a", replicas=3)), headers=apply)
    assert second.status == 200
    assert (await second.json())["spec"]["replicas"] == 3


async def test_version_answers_with_and_without_a_trailing_slash(api: aiohttp.ClientSession) -> None:
    for path in ("/version", "/version/"):
        assert (await (await api.get(path)).json())["major"] == "1"
