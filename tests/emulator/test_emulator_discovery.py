"""The kinds served: StreamsApp, the built-ins, kopf's peering; discovery documents; kmock's DSL."""

from __future__ import annotations

from typing import Any

import aiohttp
import kmock
import kubernetes

from smoothscale.sandbox.emulator import (
    CLUSTER_KOPF_PEERINGS,
    ExtendedEmulator,
    RunningEmulator,
    build_emulator,
    serve_emulator,
)
from smoothscale.sandbox.emulator.paths import parse_path


def _by_name(document: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {entry["name"]: entry for entry in document["resources"]}


async def test_streamsapp_discovery(api: aiohttp.ClientSession) -> None:
    groups = await (await api.get("/apis")).json()
    assert "smoothscale.io" in {group["name"] for group in groups["groups"]}
    document = await (await api.get("/apis/smoothscale.io/v1alpha1")).json()
    assert document["groupVersion"] == "smoothscale.io/v1alpha1"
    entries = _by_name(document)
    main = entries["streamsapps"]
    assert (main["kind"], main["namespaced"], main["shortNames"]) == ("StreamsApp", True, ["sapp"])
    assert {"get", "list", "watch", "create", "patch", "update", "delete"} <= set(main["verbs"])
    assert entries["streamsapps/status"]["kind"] == "StreamsApp"
    scale = entries["streamsapps/scale"]
    assert (scale["kind"], scale["group"], scale["version"]) == ("Scale", "autoscaling", "v1")


async def test_builtin_kinds_are_served(api: aiohttp.ClientSession) -> None:
    core = await (await api.get("/api/v1")).json()
    assert core["groupVersion"] == "v1"
    names = _by_name(core)
    for plural in (
        "pods",
        "pods/status",
        "nodes",
        "configmaps",
        "persistentvolumeclaims",
        "events",
        "namespaces",
    ):
        assert plural in names
    assert "leases" in _by_name(await (await api.get("/apis/coordination.k8s.io/v1")).json())
    assert "events" in _by_name(await (await api.get("/apis/events.k8s.io/v1")).json())
    lease = {"metadata": {"name": "leader"}, "spec": {"holderIdentity": "me"}}
    assert (
        await api.post("/apis/coordination.k8s.io/v1/namespaces/default/leases", json=lease)
    ).status == 201


async def test_kopf_peering_kinds_on_request() -> None:
    async with serve_emulator(build_emulator(peering=True)) as running, aiohttp.ClientSession() as api:
        entries = _by_name(await (await api.get(f"{running.url}/apis/kopf.dev/v1")).json())
        assert entries["clusterkopfpeerings"]["namespaced"] is False
        assert entries["kopfpeerings"]["namespaced"] is True
        peering = {"metadata": {"name": "default"}, "status": {}}
        created = await api.post(f"{running.url}/apis/kopf.dev/v1/clusterkopfpeerings", json=peering)
        assert created.status == 201
    async with serve_emulator(build_emulator()) as running:  # off by default: kopf then runs standalone
        assert CLUSTER_KOPF_PEERINGS not in running.emulator.resources


def test_namespace_paths_parse_as_the_namespaces_resource() -> None:
    assert parse_path("/api/v1/namespaces").plural == "namespaces"
    one = parse_path("/api/v1/namespaces/default")
    assert (one.plural, one.name, one.namespace) == ("namespaces", "default", None)
    status = parse_path("/api/v1/namespaces/default/status")
    assert (status.plural, status.name, status.subresource) == ("namespaces", "default", "status")
    pods = parse_path("/api/v1/namespaces/default/pods/p/status")
    assert (pods.namespace, pods.plural, pods.name, pods.subresource) == ("default", "pods", "p", "status")


def test_the_kubernetes_client_lists_and_reads_namespaces(
    threaded: RunningEmulator, k8s: kubernetes.client.ApiClient
) -> None:
    core = kubernetes.client.CoreV1Api(k8s)
    assert {ns.metadata.name for ns in core.list_namespace().items} == {"default", "kube-system"}
    assert core.read_namespace("default").status.phase == "Active"


async def test_kmock_reactions_still_take_precedence(
    api: aiohttp.ClientSession, emulator: ExtendedEmulator
) -> None:
    emulator["get /version"] << {"major": "1", "minor": "31"}
    emulator["post", kmock.resource(group="smoothscale.io")] << 418
    assert (await (await api.get("/version")).json())["minor"] == "31"
    resp = await api.post(
        "/apis/smoothscale.io/v1alpha1/namespaces/default/streamsapps", json={"metadata": {"name": "a"}}
    )
    assert resp.status == 418
    assert (await api.get("/apis/smoothscale.io/v1alpha1/namespaces/default/streamsapps/a")).status == 404
    assert len(emulator["get /version"]) == 1


async def test_request_history_is_bounded(running: RunningEmulator) -> None:
    emulator = running.emulator
    emulator.request_history = 10
    async with aiohttp.ClientSession(base_url=running.url) as api:
        for _ in range(50):
            await api.get("/api/v1/namespaces")
    assert len(list(emulator)) <= 20
