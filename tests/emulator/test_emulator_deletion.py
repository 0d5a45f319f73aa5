"""Deletion: finalizers keep an object until they are gone; owners take their dependents with them."""

from __future__ import annotations

from typing import Any

import aiohttp
from emulator_testkit import CONFIGMAPS, JSON_PATCH, MERGE, PODS, SAPPS, pod, sapp


def _owned_by(owner: dict[str, Any]) -> list[dict[str, Any]]:
    metadata = owner["metadata"]
    return [
        {
            "apiVersion": owner["apiVersion"],
            "kind": owner["kind"],
            "name": metadata["name"],
            "uid": metadata["uid"],
        }
    ]


async def test_finalizers_hold_the_object_until_removed(api: aiohttp.ClientSession) -> None:
    await api.post(SAPPS, json=sapp("a", finalizers=["smoothscale.io/cleanup"]))
    resp = await api.delete(f"{SAPPS}/a")
    assert resp.status == 200
    marked = await (await api.get(f"{SAPPS}/a")).json()
    assert marked["metadata"]["deletionTimestamp"]
    assert (await api.delete(f"{SAPPS}/a")).status == 200  # deleting again is harmless

    adding = await api.patch(
        f"{SAPPS}/a", json={"metadata": {"finalizers": ["x", "smoothscale.io/cleanup"]}}, headers=MERGE
    )
    assert adding.status == 422  # no new finalizers on an object being deleted

    ops = [
        {"op": "test", "path": "/metadata/resourceVersion", "value": marked["metadata"]["resourceVersion"]},
        {"op": "remove", "path": "/metadata/finalizers/0"},
    ]
    assert (await api.patch(f"{SAPPS}/a", json=ops, headers=JSON_PATCH)).status == 200
    assert (await api.get(f"{SAPPS}/a")).status == 404
    assert (await api.post(SAPPS, json=sapp("a"))).status == 201  # the name is free again


async def test_delete_preconditions(api: aiohttp.ClientSession) -> None:
    created = await (await api.post(SAPPS, json=sapp("a"))).json()
    stale = await api.delete(f"{SAPPS}/a", json={"preconditions": {"uid": "not-the-uid"}})
    assert stale.status == 409
    fresh = await api.delete(f"{SAPPS}/a", json={"preconditions": {"uid": created["metadata"]["uid"]}})
    assert fresh.status == 200
    assert (await api.delete(f"{SAPPS}/a")).status == 404


async def test_deleting_an_owner_deletes_its_dependents(api: aiohttp.ClientSession) -> None:
    owner = await (await api.post(SAPPS, json=sapp("a"))).json()
    other = await (await api.post(SAPPS, json=sapp("b"))).json()
    await api.post(PODS, json=pod("a-0") | {"metadata": {"name": "a-0", "ownerReferences": _owned_by(owner)}})
    await api.post(
        CONFIGMAPS, json={"metadata": {"name": "a-assignment", "ownerReferences": _owned_by(owner)}}
    )
    shared_refs = _owned_by(owner) + _owned_by(other)
    await api.post(CONFIGMAPS, json={"metadata": {"name": "shared", "ownerReferences": shared_refs}})
    await api.post("/api/v1/namespaces", json={"metadata": {"name": "elsewhere"}})
    foreign = {"metadata": {"name": "foreign", "ownerReferences": _owned_by(owner)}}
    await api.post("/api/v1/namespaces/elsewhere/configmaps", json=foreign)
    await api.post(PODS, json=pod("unrelated"))

    assert (await api.delete(f"{SAPPS}/a")).status == 200
    assert (await api.get(f"{PODS}/a-0")).status == 404
    assert (await api.get(f"{CONFIGMAPS}/a-assignment")).status == 404
    assert (await api.get(f"{CONFIGMAPS}/shared")).status == 200  # another owner still exists
    assert (await api.get("/api/v1/namespaces/elsewhere/configmaps/foreign")).status == 200  # other namespace
    assert (await api.get(f"{PODS}/unrelated")).status == 200


async def test_dependents_wait_for_the_owners_finalizers(api: aiohttp.ClientSession) -> None:
    owner = await (await api.post(SAPPS, json=sapp("a", finalizers=["f"]))).json()
    await api.post(PODS, json={"metadata": {"name": "a-0", "ownerReferences": _owned_by(owner)}})
    await api.delete(f"{SAPPS}/a")
    assert (await api.get(f"{PODS}/a-0")).status == 200
    await api.patch(f"{SAPPS}/a", json={"metadata": {"finalizers": None}}, headers=MERGE)
    assert (await api.get(f"{SAPPS}/a")).status == 404
    assert (await api.get(f"{PODS}/a-0")).status == 404


async def test_orphan_propagation_keeps_dependents(api: aiohttp.ClientSession) -> None:
    owner = await (await api.post(SAPPS, json=sapp("a"))).json()
    await api.post(PODS, json={"metadata": {"name": "a-0", "ownerReferences": _owned_by(owner)}})
    await api.delete(f"{SAPPS}/a", params={"propagationPolicy": "Orphan"})
    assert (await api.get(f"{PODS}/a-0")).status == 200


async def test_delete_collection_by_label(api: aiohttp.ClientSession) -> None:
    await api.post(PODS, json=pod("a-0", app="a"))
    await api.post(PODS, json=pod("a-1", app="a"))
    await api.post(PODS, json=pod("b-0", app="b"))
    resp = await api.delete(PODS, params={"labelSelector": "app=a"})
    assert resp.status == 200
    assert sorted(item["metadata"]["name"] for item in (await resp.json())["items"]) == ["a-0", "a-1"]
    remaining = await (await api.get(PODS)).json()
    assert [item["metadata"]["name"] for item in remaining["items"]] == ["b-0"]


async def test_deleting_a_namespace_deletes_its_objects(api: aiohttp.ClientSession) -> None:
    await api.post("/api/v1/namespaces", json={"metadata": {"name": "doomed"}})
    await api.post("/api/v1/namespaces/doomed/pods", json=pod("p"))
    assert (await api.delete("/api/v1/namespaces/doomed")).status == 200
    assert (await api.get("/api/v1/namespaces/doomed/pods/p")).status == 404
