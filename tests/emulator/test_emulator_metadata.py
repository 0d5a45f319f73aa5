"""Server-owned metadata: uid, resourceVersion, creationTimestamp, generation, namespace, generateName."""

from __future__ import annotations

import re

import aiohttp
from emulator_testkit import CONFIGMAPS, MERGE, PODS, SAPPS, pod, sapp


async def test_create_fills_server_owned_metadata(api: aiohttp.ClientSession) -> None:
    resp = await api.post(SAPPS, json={"metadata": {"name": "orders"}, "spec": {"replicas": 1}})
    assert resp.status == 201
    body = await resp.json()
    metadata = body["metadata"]
    assert re.fullmatch(r"[0-9a-f-]{36}", metadata["uid"])
    assert isinstance(metadata["resourceVersion"], str) and int(metadata["resourceVersion"]) > 0
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ", metadata["creationTimestamp"])
    assert metadata["generation"] == 1
    assert metadata["namespace"] == "default"  # from the URL: the body had none
    assert (body["apiVersion"], body["kind"]) == ("smoothscale.io/v1alpha1", "StreamsApp")
    fetched = await (await api.get(f"{SAPPS}/orders")).json()
    assert fetched == body


async def test_resource_version_is_one_cluster_wide_counter(api: aiohttp.ClientSession) -> None:
    versions = []
    for path, body in [
        (SAPPS, sapp("a")),
        (PODS, pod("p")),
        (SAPPS, sapp("b")),
        (CONFIGMAPS, {"metadata": {"name": "c"}}),
    ]:
        created = await (await api.post(path, json=body)).json()
        versions.append(int(created["metadata"]["resourceVersion"]))
    assert versions == sorted(versions) and len(set(versions)) == len(versions)
    patched = await (await api.patch(f"{SAPPS}/a", json={"spec": {"replicas": 2}}, headers=MERGE)).json()
    assert int(patched["metadata"]["resourceVersion"]) > versions[-1]


async def test_uids_differ_and_survive_updates(api: aiohttp.ClientSession) -> None:
    first = await (await api.post(SAPPS, json=sapp("a"))).json()
    second = await (await api.post(SAPPS, json=sapp("b"))).json()
    assert first["metadata"]["uid"] != second["metadata"]["uid"]
    patch = {"metadata": {"uid": "forged", "creationTimestamp": "1999-01-01T00:00:00Z", "generation": 99}}
    patched = await (await api.patch(f"{SAPPS}/a", json=patch, headers=MERGE)).json()
    for field in ("uid", "creationTimestamp", "generation"):
        assert patched["metadata"][field] == first["metadata"][field]


async def test_generation_counts_spec_changes_only(api: aiohttp.ClientSession) -> None:
    await api.post(SAPPS, json=sapp("a"))
    spec = await (await api.patch(f"{SAPPS}/a", json={"spec": {"replicas": 3}}, headers=MERGE)).json()
    assert spec["metadata"]["generation"] == 2
    labels = await (
        await api.patch(f"{SAPPS}/a", json={"metadata": {"labels": {"x": "y"}}}, headers=MERGE)
    ).json()
    assert labels["metadata"]["generation"] == 2
    status_patch = {"status": {"replicas": 3}}
    status = await (await api.patch(f"{SAPPS}/a/status", json=status_patch, headers=MERGE)).json()
    assert status["metadata"]["generation"] == 2
    assert int(status["metadata"]["resourceVersion"]) > int(labels["metadata"]["resourceVersion"])
    again = await (await api.patch(f"{SAPPS}/a", json={"spec": {"replicas": 4}}, headers=MERGE)).json()
    assert again["metadata"]["generation"] == 3


async def test_a_no_op_patch_writes_nothing(api: aiohttp.ClientSession) -> None:
    created = await (await api.post(SAPPS, json=sapp("a", replicas=2))).json()
    same = await (await api.patch(f"{SAPPS}/a", json={"spec": {"replicas": 2}}, headers=MERGE)).json()
    assert same["metadata"]["resourceVersion"] == created["metadata"]["resourceVersion"]


async def test_generate_name_gives_unique_names_for_both_event_apis(api: aiohttp.ClientSession) -> None:
    paths = ["/api/v1/namespaces/default/events", "/apis/events.k8s.io/v1/namespaces/default/events"]
    for path in paths:
        names = set()
        for _ in range(5):
            body = {"metadata": {"generateName": "orders-"}, "reason": "Scaled", "involvedObject": {}}
            resp = await api.post(path, json=body)
            assert resp.status == 201
            names.add((await resp.json())["metadata"]["name"])
        assert len(names) == 5
        assert all(re.fullmatch(r"orders-[a-z0-9]{5}", name) for name in names)


async def test_duplicate_name_is_already_exists_with_a_status_body(api: aiohttp.ClientSession) -> None:
    assert (await api.post(SAPPS, json=sapp("a"))).status == 201
    resp = await api.post(SAPPS, json=sapp("a"))
    assert resp.status == 409
    body = await resp.json()
    assert body["kind"] == "Status" and body["apiVersion"] == "v1" and body["status"] == "Failure"
    assert body["reason"] == "AlreadyExists" and body["code"] == 409
    assert body["message"] == 'streamsapps.smoothscale.io "a" already exists'
    assert body["details"] == {"name": "a", "group": "smoothscale.io", "kind": "streamsapps"}


async def test_a_missing_object_is_not_found_with_a_status_body(api: aiohttp.ClientSession) -> None:
    resp = await api.get(f"{PODS}/ghost")
    assert resp.status == 404
    body = await resp.json()
    assert (body["kind"], body["reason"], body["message"]) == ("Status", "NotFound", 'pods "ghost" not found')


async def test_namespace_rules_on_create(api: aiohttp.ClientSession) -> None:
    mismatch = await api.post(SAPPS, json=sapp("a", namespace="other"))
    assert mismatch.status == 400
    node = await (await api.post("/api/v1/nodes", json={"metadata": {"name": "n1", "namespace": "x"}})).json()
    assert "namespace" not in node["metadata"]  # cluster-scoped
    nameless = await api.post(SAPPS, json={"spec": {}})
    assert nameless.status == 422


async def test_unknown_resources_are_not_found(api: aiohttp.ClientSession) -> None:
    resp = await api.post("/apis/example.com/v1/namespaces/default/widgets", json={"metadata": {"name": "w"}})
    assert resp.status == 404
    assert (await resp.json())["kind"] == "Status"
