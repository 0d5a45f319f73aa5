"""Label and field selectors on list (and the list response's shape and pagination)."""

from __future__ import annotations

import aiohttp
import pytest
from emulator_testkit import PODS, pod

from smoothscale.sandbox.emulator import FieldSelector, LabelSelector
from smoothscale.sandbox.emulator.selectors import SelectorError

LABELS = {"app": "orders", "tier": "worker", "zone": "a"}


@pytest.mark.parametrize(
    ("selector", "expected"),
    [
        ("", True),
        ("app=orders", True),
        ("app==orders", True),
        ("app=payments", False),
        ("app!=payments", True),
        ("missing!=x", True),
        ("app in (orders, payments)", True),
        ("app in (payments)", False),
        ("zone notin (b,c)", True),
        ("zone notin (a)", False),
        ("missing notin (a)", True),
        ("tier", True),
        ("missing", False),
        ("!missing", True),
        ("!tier", False),
        ("app=orders,zone in (a,b),!missing", True),
        ("app=orders,zone in (b,c)", False),
    ],
)
def test_label_selector_grammar(selector: str, expected: bool) -> None:
    assert LabelSelector.parse(selector).matches(LABELS) is expected


@pytest.mark.parametrize("selector", ["app=", "a in (x", "=x", "a b"])
def test_label_selector_rejects_what_the_api_server_rejects(selector: str) -> None:
    if selector == "app=":  # an empty value is legal: it matches the empty label value
        assert LabelSelector.parse(selector).matches({"app": ""})
        return
    with pytest.raises(SelectorError):
        LabelSelector.parse(selector)


def test_field_selector_grammar() -> None:
    obj = {"metadata": {"name": "p1", "namespace": "ns"}, "spec": {"unschedulable": False}}
    assert FieldSelector.parse("metadata.name=p1,metadata.namespace==ns").matches(obj)
    assert not FieldSelector.parse("metadata.name!=p1").matches(obj)
    assert FieldSelector.parse("spec.unschedulable=false").matches(obj)
    assert FieldSelector.parse("status.phase=").matches(obj)  # absent fields compare as ''


async def _names(api: aiohttp.ClientSession, path: str, **params: str) -> list[str]:
    resp = await api.get(path, params=params)
    assert resp.status == 200, await resp.text()
    return [item["metadata"]["name"] for item in (await resp.json())["items"]]


async def test_list_filters_by_labels_and_fields(api: aiohttp.ClientSession) -> None:
    await api.post(PODS, json=pod("a-0", app="a", zone="x"))
    await api.post(PODS, json=pod("a-1", app="a", zone="y"))
    await api.post(PODS, json=pod("b-0", app="b"))
    await api.post("/api/v1/namespaces", json={"metadata": {"name": "other"}})
    await api.post("/api/v1/namespaces/other/pods", json=pod("a-9", app="a"))

    assert await _names(api, PODS, labelSelector="app=a") == ["a-0", "a-1"]
    assert await _names(api, PODS, labelSelector="app!=a") == ["b-0"]
    assert await _names(api, PODS, labelSelector="zone in (y,z)") == ["a-1"]
    assert await _names(api, PODS, labelSelector="zone notin (y)") == ["a-0", "b-0"]
    assert await _names(api, PODS, labelSelector="zone") == ["a-0", "a-1"]
    assert await _names(api, PODS, labelSelector="!zone") == ["b-0"]
    assert await _names(api, PODS, fieldSelector="metadata.name=a-1") == ["a-1"]
    assert await _names(api, "/api/v1/pods", labelSelector="app=a") == ["a-0", "a-1", "a-9"]
    assert await _names(api, "/api/v1/pods", fieldSelector="metadata.namespace=other") == ["a-9"]
    assert await _names(api, "/api/v1/pods", fieldSelector="metadata.namespace!=other") == [
        "a-0",
        "a-1",
        "b-0",
    ]


async def test_a_bad_selector_is_a_bad_request(api: aiohttp.ClientSession) -> None:
    resp = await api.get(PODS, params={"labelSelector": "a in (x"})
    assert resp.status == 400
    assert (await resp.json())["reason"] == "BadRequest"


async def test_list_response_has_kind_api_version_and_resource_version(api: aiohttp.ClientSession) -> None:
    created = await (await api.post(PODS, json=pod("p"))).json()
    body = await (await api.get(PODS)).json()
    assert body["kind"] == "PodList" and body["apiVersion"] == "v1"
    assert body["metadata"]["resourceVersion"] == created["metadata"]["resourceVersion"]
    sapps = await (await api.get("/apis/smoothscale.io/v1alpha1/streamsapps")).json()
    assert (sapps["kind"], sapps["apiVersion"]) == ("StreamsAppList", "smoothscale.io/v1alpha1")


async def test_list_paginates_with_limit_and_continue(api: aiohttp.ClientSession) -> None:
    for index in range(5):
        await api.post(PODS, json=pod(f"p{index}"))
    first = await (await api.get(PODS, params={"limit": "2"})).json()
    assert [item["metadata"]["name"] for item in first["items"]] == ["p0", "p1"]
    assert first["metadata"]["remainingItemCount"] == 3
    second = await (
        await api.get(PODS, params={"limit": "2", "continue": first["metadata"]["continue"]})
    ).json()
    assert [item["metadata"]["name"] for item in second["items"]] == ["p2", "p3"]
    third = await (
        await api.get(PODS, params={"limit": "2", "continue": second["metadata"]["continue"]})
    ).json()
    assert [item["metadata"]["name"] for item in third["items"]] == ["p4"]
    assert "continue" not in third["metadata"]
