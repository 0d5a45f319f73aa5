"""Reading the cluster: pod records, zones, names, credentials, and the operator's own API client."""

from __future__ import annotations

from pathlib import Path

import pytest

from smoothscale.control import object_names
from smoothscale.control.pods import leaving_since, parse_time, pod_info
from smoothscale.control.zones import node_zone, pod_zone
from smoothscale.operator.kube import KubeClient, KubeError, core_path
from smoothscale.operator.login import connection_from_kubeconfig
from smoothscale.sandbox.emulator import RunningEmulator

POD = {
    "metadata": {
        "name": "orders-12",
        "uid": "u-12",
        "labels": {object_names.APP_LABEL: "orders", object_names.REVISION_LABEL: "abc"},
        "annotations": {
            object_names.LEAVING_ANNOTATION: "2026-11-21T10:00:00Z",
            object_names.LEAVING_REASON_ANNOTATION: "ScaleDown",
            object_names.METRICS_PORT_ANNOTATION: "41000",
        },
        "deletionTimestamp": "2026-11-21T10:05:00Z",
    },
    "spec": {"nodeName": "node-3"},
    "status": {"phase": "Running", "podIP": "10.1.2.3", "conditions": [{"type": "Ready", "status": "True"}]},
}


def test_a_pod_record_has_what_the_operator_decides_on() -> None:
    pod = pod_info(POD)
    assert (pod.name, pod.app, pod.ordinal, pod.revision) == ("orders-12", "orders", 12, "abc")
    assert (pod.node, pod.ip, pod.metrics_port, pod.ready) == ("node-3", "10.1.2.3", 41000, True)
    assert (
        pod.is_leaving
        and pod.leaving_reason == "ScaleDown"
        and leaving_since(pod) == parse_time(pod.leaving or "")
    )
    assert pod.deleting and pod.alive and not pod.schedulable_client, "terminating: may still process"
    fresh = pod_info({"metadata": {"name": "orders-0", "labels": {object_names.APP_LABEL: "orders"}}})
    assert (fresh.phase, fresh.ready, fresh.node, fresh.ip, fresh.leaving) == (
        "Pending",
        False,
        None,
        None,
        None,
    )
    failed = pod_info({**POD, "status": {"phase": "Failed"}})
    assert failed.stopped and not failed.alive


def test_ordinals_and_names() -> None:
    assert object_names.ordinal_of("orders", "orders-3") == 3
    assert object_names.ordinal_of("orders-2", "orders-2-10") == 10
    assert (
        object_names.ordinal_of("orders", "orders-03") is None
        and object_names.ordinal_of("orders", "other-1") is None
    )
    assert (
        object_names.pod_name("orders", 4) == "orders-4"
        and object_names.state_claim("orders", 4) == "orders-state-4"
    )
    assert object_names.assignment_configmap("orders") == "orders-assignment"


def test_a_person_may_mark_a_pod_leaving_with_any_value() -> None:
    pod = pod_info(
        {**POD, "metadata": {**POD["metadata"], "annotations": {object_names.LEAVING_ANNOTATION: "yes"}}}
    )
    assert pod.is_leaving and leaving_since(pod) is None, "the operator stamps the time it first saw it"


def test_zones_come_from_the_nodes_label() -> None:
    labelled = {"metadata": {"name": "n", "labels": {"topology.kubernetes.io/zone": "eu-west-1a"}}}
    assert node_zone(labelled) == "eu-west-1a"
    assert node_zone({"metadata": {"name": "n"}}) is None, "no label: unknown, not a zone named unknown"
    assert pod_zone("n", {"n": "eu-west-1a"}) == "eu-west-1a"
    assert pod_zone("other", {"n": "eu-west-1a"}) is None and pod_zone(None, {}) is None


async def test_the_client_speaks_json_with_kopfs_credentials(
    cluster: RunningEmulator, tmp_path: Path
) -> None:
    connection = connection_from_kubeconfig(Path(cluster.kubeconfig))
    assert connection.server == cluster.url
    api = KubeClient(lambda: connection, timeout=5)
    configmaps = core_path("default", "configmaps")
    body = {"metadata": {"name": "orders-assignment"}, "data": {"generation": "1"}}
    try:
        created = await api.create(configmaps, body)
        path = core_path("default", "configmaps", "orders-assignment")
        stale = {"metadata": {"resourceVersion": "1"}, "data": {"generation": "2"}}
        with pytest.raises(KubeError) as conflict:
            await api.patch(path, stale)
        assert conflict.value.conflict
        version = created["metadata"]["resourceVersion"]
        patched = await api.patch(
            path, {"metadata": {"resourceVersion": version}, "data": {"generation": "2"}}
        )
        assert patched["data"] == {"generation": "2"}
        with pytest.raises(KubeError) as missing:
            await api.get(core_path("default", "configmaps", "nothing"))
        assert missing.value.not_found
    finally:
        await api.close()
