"""The `/scale` subresource of `StreamsApp`, as HPA, KEDA and `kubectl scale` use it."""

from __future__ import annotations

import aiohttp
import kubernetes
from emulator_testkit import MERGE, SAPPS, sapp

from smoothscale.sandbox.emulator import RunningEmulator


async def test_get_scale_returns_an_autoscaling_v1_scale(api: aiohttp.ClientSession) -> None:
    created = await (await api.post(SAPPS, json=sapp("a", replicas=3))).json()
    await api.patch(f"{SAPPS}/a/status", json={"status": {"replicas": 2, "selector": "app=a"}}, headers=MERGE)
    resp = await api.get(f"{SAPPS}/a/scale")
    assert resp.status == 200
    scale = await resp.json()
    assert (scale["apiVersion"], scale["kind"]) == ("autoscaling/v1", "Scale")
    assert scale["metadata"]["name"] == "a" and scale["metadata"]["namespace"] == "default"
    assert scale["metadata"]["uid"] == created["metadata"]["uid"]
    assert scale["spec"] == {"replicas": 3}
    assert scale["status"] == {"replicas": 2, "selector": "app=a"}


async def test_patch_scale_sets_spec_replicas(api: aiohttp.ClientSession) -> None:
    await api.post(SAPPS, json=sapp("a", replicas=3))
    resp = await api.patch(f"{SAPPS}/a/scale", json={"spec": {"replicas": 6}}, headers=MERGE)
    assert resp.status == 200
    assert (await resp.json())["spec"] == {"replicas": 6}
    app = await (await api.get(f"{SAPPS}/a")).json()
    assert app["spec"]["replicas"] == 6 and app["metadata"]["generation"] == 2


async def test_put_scale_honours_the_resource_version(api: aiohttp.ClientSession) -> None:
    await api.post(SAPPS, json=sapp("a", replicas=3))
    scale = await (await api.get(f"{SAPPS}/a/scale")).json()
    fresh = await api.put(f"{SAPPS}/a/scale", json={**scale, "spec": {"replicas": 4}})
    assert fresh.status == 200
    stale = await api.put(f"{SAPPS}/a/scale", json={**scale, "spec": {"replicas": 5}})
    assert stale.status == 409
    invalid = await api.put(f"{SAPPS}/a/scale", json={"spec": {"replicas": -1}})
    assert invalid.status == 422
    assert (await (await api.get(f"{SAPPS}/a")).json())["spec"]["replicas"] == 4


async def test_kinds_without_a_scale_subresource_have_no_scale_endpoint(api: aiohttp.ClientSession) -> None:
    await api.post("/api/v1/namespaces/default/configmaps", json={"metadata": {"name": "cm"}})
    assert (await api.get("/api/v1/namespaces/default/configmaps/cm/scale")).status == 404


def test_the_kubernetes_client_scales_a_streamsapp(
    threaded: RunningEmulator, k8s: kubernetes.client.ApiClient
) -> None:
    custom = kubernetes.client.CustomObjectsApi(k8s)
    custom.create_namespaced_custom_object(
        "smoothscale.io", "v1alpha1", "default", "streamsapps", sapp("a", 2)
    )
    custom.patch_namespaced_custom_object_scale(
        "smoothscale.io", "v1alpha1", "default", "streamsapps", "a", {"spec": {"replicas": 5}}
    )
    scale = custom.get_namespaced_custom_object_scale(
        "smoothscale.io", "v1alpha1", "default", "streamsapps", "a"
    )
    assert scale["spec"]["replicas"] == 5
