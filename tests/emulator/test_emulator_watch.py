"""Watch streams: resume from a resourceVersion, timeouts, bookmarks, selectors, 410, framing."""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import AsyncIterator
from typing import Any

import aiohttp
import kubernetes
import pytest
from emulator_testkit import MERGE, PODS, SAPPS, pod, sapp

from smoothscale.sandbox.emulator import RunningEmulator, build_emulator, serve_emulator


async def _events(resp: aiohttp.ClientResponse) -> AsyncIterator[dict[str, Any]]:
    async for line in resp.content:
        if line.strip():
            yield json.loads(line)


async def _take(resp: aiohttp.ClientResponse, count: int, timeout: float = 3.0) -> list[dict[str, Any]]:
    taken: list[dict[str, Any]] = []
    async with asyncio.timeout(timeout):
        async for event in _events(resp):
            taken.append(event)
            if len(taken) == count:
                break
    return taken


def _summary(events: list[dict[str, Any]]) -> list[tuple[str, str]]:
    return [(event["type"], event["object"]["metadata"].get("name", "")) for event in events]


async def test_watch_from_the_list_version_sends_only_newer_events(api: aiohttp.ClientSession) -> None:
    await api.post(SAPPS, json=sapp("before"))
    listed = await (await api.get(SAPPS)).json()
    await api.post(SAPPS, json=sapp("between"))  # after the list, before the watch: must not be lost
    params = {"watch": "true", "resourceVersion": listed["metadata"]["resourceVersion"]}
    async with api.get(SAPPS, params=params) as resp:
        assert resp.status == 200
        assert resp.headers["Content-Type"].startswith("application/json")
        await api.patch(f"{SAPPS}/before", json={"spec": {"replicas": 2}}, headers=MERGE)
        await api.delete(f"{SAPPS}/between")
        events = await _take(resp, 3)
    assert _summary(events) == [("ADDED", "between"), ("MODIFIED", "before"), ("DELETED", "between")]
    versions = [int(event["object"]["metadata"]["resourceVersion"]) for event in events]
    assert versions == sorted(versions) and versions[0] > int(listed["metadata"]["resourceVersion"])


async def test_watch_without_a_version_starts_with_the_current_objects(api: aiohttp.ClientSession) -> None:
    await api.post(SAPPS, json=sapp("a"))
    await api.post(SAPPS, json=sapp("b"))
    async with api.get(SAPPS, params={"watch": "true"}) as resp:
        initial = await _take(resp, 2)
        await api.post(SAPPS, json=sapp("c"))
        live = await _take(resp, 1)
    assert _summary(initial) == [("ADDED", "a"), ("ADDED", "b")]
    assert _summary(live) == [("ADDED", "c")]


async def test_timeout_seconds_ends_the_stream(api: aiohttp.ClientSession) -> None:
    started = time.monotonic()
    async with api.get(SAPPS, params={"watch": "true", "timeoutSeconds": "1"}) as resp:
        assert [event async for event in _events(resp)] == []
    assert 0.9 <= time.monotonic() - started < 2.5


async def test_bookmarks_are_sent_when_allowed(api: aiohttp.ClientSession) -> None:
    await api.post(
        PODS, json=pod("p")
    )  # a change of another kind: the bookmark must carry the global version
    listed = await (await api.get(SAPPS)).json()
    params = {
        "watch": "true",
        "allowWatchBookmarks": "true",
        "resourceVersion": listed["metadata"]["resourceVersion"],
    }
    async with api.get(SAPPS, params=params) as resp:
        (bookmark,) = await _take(resp, 1)
    assert bookmark["type"] == "BOOKMARK"
    assert bookmark["object"]["kind"] == "StreamsApp"
    assert bookmark["object"]["metadata"]["resourceVersion"] == listed["metadata"]["resourceVersion"]
    async with api.get(SAPPS, params={"watch": "true", "timeoutSeconds": "1"}) as resp:
        assert all(event["type"] != "BOOKMARK" for event in [event async for event in _events(resp)])


async def test_send_initial_events_ends_with_a_marked_bookmark(api: aiohttp.ClientSession) -> None:
    await api.post(SAPPS, json=sapp("a"))
    params = {"watch": "true", "allowWatchBookmarks": "true", "sendInitialEvents": "true"}
    async with api.get(SAPPS, params=params) as resp:
        added, bookmark = await _take(resp, 2)
    assert added["type"] == "ADDED" and bookmark["type"] == "BOOKMARK"
    assert bookmark["object"]["metadata"]["annotations"] == {"k8s.io/initial-events-end": "true"}


async def test_label_selector_turns_transitions_into_added_and_deleted(api: aiohttp.ClientSession) -> None:
    await api.post(PODS, json=pod("p", app="a"))
    await api.post(PODS, json=pod("q", app="b"))
    listed = await (await api.get(PODS)).json()
    params = {
        "watch": "true",
        "labelSelector": "app=a",
        "resourceVersion": listed["metadata"]["resourceVersion"],
    }
    async with api.get(PODS, params=params) as resp:
        await api.patch(f"{PODS}/q", json={"metadata": {"labels": {"app": "a"}}}, headers=MERGE)
        await api.patch(f"{PODS}/p", json={"metadata": {"labels": {"app": "z"}}}, headers=MERGE)
        await api.patch(f"{PODS}/q", json={"metadata": {"labels": {"extra": "1"}}}, headers=MERGE)
        events = await _take(resp, 3)
    assert _summary(events) == [("ADDED", "q"), ("DELETED", "p"), ("MODIFIED", "q")]


async def test_field_selector_and_url_name_narrow_a_watch(api: aiohttp.ClientSession) -> None:
    await api.post(SAPPS, json=sapp("a"))
    await api.post(SAPPS, json=sapp("b"))
    async with api.get(SAPPS, params={"watch": "true", "fieldSelector": "metadata.name=b"}) as resp:
        assert _summary(await _take(resp, 1)) == [("ADDED", "b")]
    async with api.get(f"{SAPPS}/a", params={"watch": "true"}) as resp:
        assert _summary(await _take(resp, 1)) == [("ADDED", "a")]


async def test_a_compacted_resource_version_answers_410_expired() -> None:
    async with serve_emulator(build_emulator(event_window=2)) as running, aiohttp.ClientSession() as api:
        sapps = f"{running.url}{SAPPS}"
        first = await (await api.post(sapps, json=sapp("a"))).json()
        for replicas in range(2, 8):
            await api.patch(f"{sapps}/a", json={"spec": {"replicas": replicas}}, headers=MERGE)
        params = {"watch": "true", "resourceVersion": first["metadata"]["resourceVersion"]}
        async with api.get(sapps, params=params) as resp:
            (error,) = await _take(resp, 1)
    assert error["type"] == "ERROR"
    assert (error["object"]["code"], error["object"]["reason"]) == (410, "Expired")


async def test_bad_watch_parameters_are_a_bad_request(api: aiohttp.ClientSession) -> None:
    resp = await api.get(SAPPS, params={"watch": "true", "resourceVersion": "abc"})
    assert resp.status == 400


async def test_stopping_the_server_ends_open_watches_promptly() -> None:
    async with aiohttp.ClientSession() as session:
        async with serve_emulator() as running:
            resp = await session.get(f"{running.url}{SAPPS}", params={"watch": "true"})
            await asyncio.sleep(0.1)
            started = time.monotonic()
        assert time.monotonic() - started < 1.0
        assert [event async for event in _events(resp)] == []  # ended cleanly, not hanging


@pytest.mark.parametrize("resource_version", [None, "list"])
def test_the_kubernetes_client_watches(
    threaded: RunningEmulator, k8s: kubernetes.client.ApiClient, resource_version: str | None
) -> None:
    core = kubernetes.client.CoreV1Api(k8s)
    core.create_namespaced_pod("default", pod("p1"))
    listed = core.list_namespaced_pod("default")
    version = listed.metadata.resource_version if resource_version == "list" else None
    core.create_namespaced_pod("default", pod("p2"))
    seen = []
    watch = kubernetes.watch.Watch()
    started = time.monotonic()
    for event in watch.stream(
        core.list_namespaced_pod, "default", resource_version=version, timeout_seconds=1
    ):
        seen.append((event["type"], event["object"].metadata.name))
    assert time.monotonic() - started < 3
    expected = [("ADDED", "p2")] if version else [("ADDED", "p1"), ("ADDED", "p2")]
    assert seen == expected
