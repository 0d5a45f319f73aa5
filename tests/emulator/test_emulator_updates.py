"""PUT and PATCH: optimistic concurrency, patch formats, and the status subresource."""

from __future__ import annotations

from typing import Any

import aiohttp
from emulator_testkit import CONFIGMAPS, JSON_PATCH, MERGE, SAPPS, sapp

STRATEGIC = {"Content-Type": "application/strategic-merge-patch+json"}


async def _create(api: aiohttp.ClientSession, name: str = "a") -> dict[str, Any]:
    resp = await api.post(SAPPS, json=sapp(name, replicas=1))
    assert resp.status == 201
    return dict(await resp.json())


async def test_put_replaces_the_object(api: aiohttp.ClientSession) -> None:
    created = await _create(api)
    body = {**created, "spec": {"replicas": 7}}
    resp = await api.put(f"{SAPPS}/a", json=body)
    assert resp.status == 200
    replaced = await resp.json()
    assert replaced["spec"] == {"replicas": 7}
    assert replaced["metadata"]["generation"] == 2
    assert int(replaced["metadata"]["resourceVersion"]) > int(created["metadata"]["resourceVersion"])


async def test_put_with_a_stale_resource_version_is_a_conflict(api: aiohttp.ClientSession) -> None:
    created = await _create(api)
    await api.patch(f"{SAPPS}/a", json={"spec": {"replicas": 2}}, headers=MERGE)
    resp = await api.put(f"{SAPPS}/a", json={**created, "spec": {"replicas": 9}})
    assert resp.status == 409
    body = await resp.json()
    assert body["reason"] == "Conflict" and "the object has been modified" in body["message"]
    assert (await (await api.get(f"{SAPPS}/a")).json())["spec"] == {"replicas": 2}


async def test_put_without_a_resource_version_is_unconditional(api: aiohttp.ClientSession) -> None:
    await _create(api)
    resp = await api.put(f"{SAPPS}/a", json=sapp("a", replicas=3))
    assert resp.status == 200
    assert (await resp.json())["spec"] == {"replicas": 3}


async def test_put_of_a_missing_object_or_a_renamed_body_fails(api: aiohttp.ClientSession) -> None:
    assert (await api.put(f"{SAPPS}/ghost", json=sapp("ghost"))).status == 404
    await _create(api)
    assert (await api.put(f"{SAPPS}/a", json=sapp("b"))).status == 400


async def test_merge_patch_with_a_stale_resource_version_is_a_conflict(api: aiohttp.ClientSession) -> None:
    created = await _create(api)
    stale = created["metadata"]["resourceVersion"]
    ok = await api.patch(
        f"{SAPPS}/a", json={"metadata": {"resourceVersion": stale}, "spec": {"replicas": 2}}, headers=MERGE
    )
    assert ok.status == 200
    resp = await api.patch(
        f"{SAPPS}/a", json={"metadata": {"resourceVersion": stale}, "spec": {"replicas": 3}}, headers=MERGE
    )
    assert resp.status == 409
    assert (await resp.json())["reason"] == "Conflict"


async def test_json_patch_tests_the_resource_version_as_kopf_does(api: aiohttp.ClientSession) -> None:
    created = await _create(api)
    current = created["metadata"]["resourceVersion"]
    ops = [
        {"op": "test", "path": "/metadata/resourceVersion", "value": current},
        {"op": "add", "path": "/metadata/finalizers", "value": ["kopf.zalando.org/KopfFinalizerMarker"]},
    ]
    resp = await api.patch(f"{SAPPS}/a", json=ops, headers=JSON_PATCH)
    assert resp.status == 200
    assert (await resp.json())["metadata"]["finalizers"] == ["kopf.zalando.org/KopfFinalizerMarker"]
    stale = await api.patch(f"{SAPPS}/a", json=ops, headers=JSON_PATCH)  # `current` is stale by now
    assert stale.status == 422  # kopf expects 422 (APIUnprocessableEntityError) and retries later
    assert (await stale.json())["kind"] == "Status"


async def test_merge_patch_follows_rfc_7386(api: aiohttp.ClientSession) -> None:
    await _create(api)
    await api.patch(f"{SAPPS}/a", json={"spec": {"template": {"a": 1}, "items": [1, 2]}}, headers=MERGE)
    resp = await api.patch(
        f"{SAPPS}/a", json={"spec": {"template": "flat", "items": [3], "replicas": None}}, headers=MERGE
    )
    assert resp.status == 200
    assert (await resp.json())["spec"] == {"template": "flat", "items": [3]}


async def test_strategic_merge_patch_acts_as_a_merge_patch(api: aiohttp.ClientSession) -> None:
    await api.post(CONFIGMAPS, json={"metadata": {"name": "cm"}, "data": {"a": "1"}})
    resp = await api.patch(f"{CONFIGMAPS}/cm", json={"data": {"b": "2"}}, headers=STRATEGIC)
    assert resp.status == 200
    assert (await resp.json())["data"] == {"a": "1", "b": "2"}


async def test_unknown_patch_types_are_unsupported(api: aiohttp.ClientSession) -> None:
    await _create(api)
    resp = await api.patch(f"{SAPPS}/a", data=b"{}", headers={"Content-Type": "text/plain"})
    assert resp.status == 415


async def test_status_patch_changes_only_the_status(api: aiohttp.ClientSession) -> None:
    await _create(api)
    patch = {"spec": {"replicas": 99}, "metadata": {"labels": {"x": "y"}}, "status": {"phase": "Running"}}
    resp = await api.patch(f"{SAPPS}/a/status", json=patch, headers=MERGE)
    assert resp.status == 200
    body = await resp.json()
    assert body["status"] == {"phase": "Running"}
    assert body["spec"] == {"replicas": 1}
    assert "labels" not in body["metadata"]


async def test_main_resource_patch_and_put_ignore_the_status(api: aiohttp.ClientSession) -> None:
    await _create(api)
    await api.patch(f"{SAPPS}/a/status", json={"status": {"phase": "Running"}}, headers=MERGE)
    patched = await (
        await api.patch(f"{SAPPS}/a", json={"status": {"phase": "Hacked"}}, headers=MERGE)
    ).json()
    assert patched["status"] == {"phase": "Running"}
    put = await (
        await api.put(f"{SAPPS}/a", json={**sapp("a", replicas=2), "status": {"phase": "Hacked"}})
    ).json()
    assert put["status"] == {"phase": "Running"} and put["spec"] == {"replicas": 2}


async def test_status_put_replaces_only_the_status(api: aiohttp.ClientSession) -> None:
    created = await _create(api)
    body = {**created, "spec": {"replicas": 5}, "status": {"replicas": 1}}
    resp = await api.put(f"{SAPPS}/a/status", json=body)
    assert resp.status == 200
    replaced = await resp.json()
    assert replaced["status"] == {"replicas": 1} and replaced["spec"] == {"replicas": 1}


async def test_status_is_not_settable_on_create(api: aiohttp.ClientSession) -> None:
    created = await (await api.post(SAPPS, json={**sapp("a"), "status": {"phase": "Fake"}})).json()
    assert "status" not in created
    pod = await (await api.post("/api/v1/namespaces/default/pods", json={"metadata": {"name": "p"}})).json()
    assert pod["status"] == {"phase": "Pending"}


async def test_kinds_without_a_status_subresource_have_no_status_endpoint(api: aiohttp.ClientSession) -> None:
    await api.post(CONFIGMAPS, json={"metadata": {"name": "cm"}})
    resp = await api.patch(f"{CONFIGMAPS}/cm/status", json={"status": {}}, headers=MERGE)
    assert resp.status == 404
