"""The client library's lease against the emulated API: renewed, fenced when it cannot be, taken back.

A pod with a lease processes its actives only while it holds it (docs/failover.md): it stops them a margin
before a lease it could not renew runs out, resumes them when it renews again if the operator took nothing,
and, when the operator took its Lease (its holder emptied, the generation in force written down), resumes
only from a later generation, the one that failed its actives over.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from types import SimpleNamespace
from typing import Any, cast

import kmock
import kubernetes
import pytest
from sandbox_testkit import NAMESPACE, configmap_body, eventually, publication, publish
from test_sandbox_client import POD, Recorder, running

from smoothscale.client import AssignmentApplier, ClientConfig, StreamsClient
from smoothscale.client.client import USER_AGENT
from smoothscale.client.lease import FENCE_MARGIN
from smoothscale.contract import shared_names as contract
from smoothscale.sandbox.emulator import RunningEmulator

APP = "orders"
LEASE_SECONDS = 1.5
LEASES_PATH = f"/apis/coordination.k8s.io/v1/namespaces/{NAMESPACE}/leases*"


@pytest.fixture()
def leases(cluster: RunningEmulator) -> Iterator[kubernetes.client.CoordinationV1Api]:
    with kubernetes.config.new_client_from_config(config_file=str(cluster.kubeconfig)) as client:
        yield kubernetes.client.CoordinationV1Api(client)


@pytest.fixture()
def client(cluster: RunningEmulator, recorder: Recorder) -> Iterator[StreamsClient]:
    with running(cluster, recorder, metrics_port=None, lease_seconds=LEASE_SECONDS) as started:
        yield started


@pytest.fixture()
def recorder() -> Recorder:
    return Recorder()


def _lease(leases: kubernetes.client.CoordinationV1Api) -> Any:
    """The pod's Lease (None: not created yet)."""
    try:
        return leases.read_namespaced_lease(contract.pod_lease(POD), NAMESPACE)
    except kubernetes.client.ApiException as error:
        if error.status == 404:
            return None
        raise


def _cut_off(cluster: RunningEmulator) -> None:
    """The pod can no longer reach the API server for its Lease (its watches go on: the worst case); the
    test's own requests, as the operator's, still can."""
    cluster.emulator.faults.fail(503, times=None, path=LEASES_PATH, when=_from_the_pod)


def _from_the_pod(request: kmock.Request) -> bool:
    return str(request.headers.get("User-Agent", "")).startswith(USER_AGENT)


def _active_and_fenced(
    core: kubernetes.client.CoreV1Api, cluster: RunningEmulator, client: StreamsClient, recorder: Recorder
) -> float:
    """Generation 1 gives the pod an active; then the pod is cut off until it fences: how long it took."""
    publish(core, APP, configmap_body(APP, publication(1, **{POD: {"active": ["0_0"], "standby": ["1_0"]}})))
    eventually(lambda: ("assigned", "0_0", 0) in recorder.calls)
    assert client.may_process()
    _cut_off(cluster)
    cut = time.monotonic()
    eventually(lambda: ("revoked", "0_0", 1) in recorder.calls, timeout=LEASE_SECONDS * 2)
    assert not client.may_process()
    return time.monotonic() - cut


def test_the_pod_processes_nothing_before_it_holds_its_lease_then_renews_it(
    core: kubernetes.client.CoreV1Api,
    leases: kubernetes.client.CoordinationV1Api,
    client: StreamsClient,
    recorder: Recorder,
) -> None:
    lease = eventually(lambda: _lease(leases))
    assert lease.spec.holder_identity == POD
    assert lease.metadata.labels == {contract.LEASE_LABEL: APP}
    assert lease.spec.lease_duration_seconds == 2
    core.create_namespaced_pod(NAMESPACE, {"metadata": {"name": POD}, "spec": {"containers": []}})
    uid = core.read_namespaced_pod(POD, NAMESPACE).metadata.uid
    owned = eventually(lambda: (found := _lease(leases)).metadata.owner_references and found, timeout=15)
    assert [(o.kind, o.name, o.uid) for o in owned.metadata.owner_references] == [("Pod", POD, uid)]
    eventually(client.may_process)
    publish(core, APP, configmap_body(APP, publication(1, **{POD: {"active": ["0_0"]}})))
    eventually(lambda: client.applier.generation == 1)
    first = lease.metadata.resource_version
    eventually(lambda: _lease(leases).metadata.resource_version != first, timeout=LEASE_SECONDS)  # renewed
    assert recorder.calls == [("assigned", "0_0", 0)]


def test_a_pod_cut_off_from_the_api_stops_its_actives_before_its_lease_ends_and_resumes_them_after(
    core: kubernetes.client.CoreV1Api, cluster: RunningEmulator, client: StreamsClient, recorder: Recorder
) -> None:
    took = _active_and_fenced(core, cluster, client, recorder)
    # the last renewal before the cut was sent at most a third of a lease before it
    assert took <= LEASE_SECONDS * (1 - FENCE_MARGIN) + 0.3
    assert ("standby-", "1_0", 1) not in recorder.calls  # standbys write nothing downstream: they go on
    cluster.emulator.faults.clear()
    # nobody took the Lease, so nothing was failed over: the same generation's actives start again
    eventually(lambda: recorder.calls.count(("assigned", "0_0", 1)) == 1, timeout=LEASE_SECONDS * 2)
    assert client.may_process()


def test_a_pod_whose_lease_was_taken_resumes_only_from_the_generation_that_failed_it_over(
    core: kubernetes.client.CoreV1Api,
    leases: kubernetes.client.CoordinationV1Api,
    cluster: RunningEmulator,
    client: StreamsClient,
    recorder: Recorder,
) -> None:
    _active_and_fenced(core, cluster, client, recorder)
    # the operator's take, while the pod is still cut off: the holder emptied, the generation in force
    # written down, conditional on the resourceVersion read
    body = leases.read_namespaced_lease(contract.pod_lease(POD), NAMESPACE)
    body.spec.holder_identity = None
    body.metadata.annotations = {contract.TAKEN_AT_GENERATION_ANNOTATION: "1"}
    leases.replace_namespaced_lease(contract.pod_lease(POD), NAMESPACE, body)
    cluster.emulator.faults.clear()
    eventually(lambda: _lease(leases).spec.holder_identity == POD, timeout=LEASE_SECONDS * 2)  # taken back
    taken_back = _lease(leases)
    assert taken_back.spec.lease_transitions == 1
    annotations = taken_back.metadata.annotations or {}
    assert contract.TAKEN_AT_GENERATION_ANNOTATION not in annotations
    assert annotations[contract.WAITING_FOR_GENERATION_ANNOTATION] == "2"  # the operator publishes one
    time.sleep(LEASE_SECONDS / 2)
    assert ("assigned", "0_0", 1) not in recorder.calls  # generation 1 may have been failed over
    assert not client.may_process()
    moved = publication(2, **{POD: {"standby": ["0_0", "1_0"]}, "orders-1": {"active": ["0_0"]}})
    publish(core, APP, configmap_body(APP, moved))
    eventually(lambda: client.applier.generation == 2)
    assert recorder.calls[-1] == ("standby+", "0_0", 1)
    assert client.may_process()  # it holds its lease: it has no active to process
    waiting = contract.WAITING_FOR_GENERATION_ANNOTATION
    eventually(lambda: waiting not in (_lease(leases).metadata.annotations or {}), timeout=LEASE_SECONDS)


def test_a_lease_needs_api_access(tmp_path: Any, recorder: Recorder) -> None:
    config = ClientConfig(
        pod=POD, namespace=NAMESPACE, app=APP, assignment_dir=tmp_path, metrics_port=None, lease_seconds=5.0
    )
    with pytest.raises(ValueError, match=r"SMOOTHSCALE_LEASE_SECONDS=5\.0\) needs API access"):
        StreamsClient(config, recorder).start()


def test_a_fenced_applier_applies_nothing_until_it_holds_the_lease_and_the_generation_it_needs(
    recorder: Recorder,
) -> None:
    applier = AssignmentApplier(POD, recorder, fenced=True)
    recorder.client = cast(StreamsClient, SimpleNamespace(applier=applier))
    assert not applier.offer(publication(1, **{POD: {"active": ["0_0"]}}))
    assert recorder.calls == [] and applier.fenced
    assert applier.unfence(None)  # the first renewal: the newest publication applies
    assert recorder.calls == [("assigned", "0_0", 0)] and applier.generation == 1

    applier.fence()
    assert recorder.calls[-1] == ("revoked", "0_0", 1)
    assert not applier.offer(publication(2, **{POD: {"active": ["0_0", "0_1"]}}))  # held while fenced
    assert not applier.unfence(3)  # taken in generation 2: only generation 3 or later resumes it
    assert not applier.offer(publication(2, **{POD: {"active": ["0_0", "0_1"]}}))
    assert applier.offer(publication(3, **{POD: {"standby": ["0_0"]}}))
    assert recorder.calls[-1] == ("standby+", "0_0", 1) and not applier.fenced
    assert applier.generation == 3
