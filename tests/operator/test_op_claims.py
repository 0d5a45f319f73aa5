"""A pod's claim is there before the pod: issue 40's chaos failure (seed 9, 40 events on a cold machine: two
pods held no task for minutes after the faults stopped, `{'orders-0': 0, 'orders-1': 6, 'orders-2': 6,
'orders-4': 0}`). A 409 to the claim's creation was taken for "the claim is there", the pod was created
without it, and the kubelet kept it Pending for good (a pod whose claim does not exist does not start): never
ready, it took part in no plan, while it counted toward `replicas`. A real API server answers 409 to the
creation of a claim whose previous one is still being deleted (a scale-in deleted it, its
`kubernetes.io/pvc-protection` finalizer holds it while its old pod runs), with the same outcome."""

from __future__ import annotations

import asyncio
import re
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any, cast

import pytest
from op_testkit import Kubectl, balanced, streamsapp, wait_for

from smoothscale.control.scaling import PodSetPlan
from smoothscale.operator.appref import AppRef
from smoothscale.operator.kube import KubeClient, KubeError
from smoothscale.operator.podactions import PodSetActions
from smoothscale.operator.reporting import AppReporter
from smoothscale.resource import load_spec
from smoothscale.sandbox.emulator import RunningEmulator
from smoothscale.sandbox.emulator.memoryruntime import MemoryRuntime

CLAIMS = re.compile(r"/persistentvolumeclaims$")


def test_a_claim_refused_with_409_is_created_before_its_pod(
    kube: Kubectl, fake: MemoryRuntime, cluster: RunningEmulator, run_operator
) -> None:
    cluster.emulator.faults.conflict(times=2, method="POST", path=CLAIMS)
    with run_operator():
        kube.apply(streamsapp(replicas=3, partitions=6, storage=True))
        wait_for(lambda: balanced(kube.publication(), 3, 6), timeout=30, what="balance on 3 pods")
        assert all(pod.status.phase == "Running" for pod in kube.pods().values())


class _Api:
    """The API as `PodSetActions` meets it: every claim creation refused with 409, the claim read back as
    `found` (None: gone), every request recorded."""

    def __init__(self, found: dict[str, Any] | None) -> None:
        self.found = found
        self.requests: list[tuple[str, str]] = []

    async def create(self, path: str, body: Mapping[str, Any]) -> dict[str, Any]:
        self.requests.append(("POST", path))
        if path.endswith("/persistentvolumeclaims") and len(self.requests) == 1:
            raise KubeError(409, "AlreadyExists", "persistentvolumeclaims already exists")
        return dict(body)

    async def get(self, path: str) -> dict[str, Any]:
        self.requests.append(("GET", path))
        if self.found is None:
            raise KubeError(404, "NotFound", "not found")
        return self.found


class _Report:
    def scaling(self, step: str, pod: str, reason: str) -> None:
        pass


def create_ordinal_2(api: _Api) -> None:
    spec = load_spec(streamsapp(replicas=3, partitions=6, storage=True)["spec"])
    actions = PodSetActions(
        AppRef("default", "orders", "uid"), cast(KubeClient, api), cast(AppReporter, _Report())
    )
    asyncio.run(actions.apply(PodSetPlan(create=(2,)), spec, "r1", datetime(2026, 11, 28, tzinfo=UTC)))


def test_a_claim_still_being_deleted_holds_its_pod_back() -> None:
    """A 409 from a claim that is still being deleted (its pvc-protection finalizer waits for the pod that
    used it): the round fails, no pod is created; the next round tries again."""
    api = _Api({"metadata": {"name": "orders-state-2", "deletionTimestamp": "2026-11-28T12:00:00Z"}})
    with pytest.raises(KubeError, match="ClaimTerminating"):
        create_ordinal_2(api)
    assert [method for method, _ in api.requests] == ["POST", "GET"]


def test_a_claim_gone_after_a_409_is_created_again_then_its_pod() -> None:
    api = _Api(None)
    create_ordinal_2(api)
    claims = "/api/v1/namespaces/default/persistentvolumeclaims"
    assert api.requests == [
        ("POST", claims),
        ("GET", f"{claims}/orders-state-2"),
        ("POST", claims),
        ("POST", "/api/v1/namespaces/default/pods"),
    ]


def test_a_claim_that_stands_is_used_as_it_is() -> None:
    api = _Api({"metadata": {"name": "orders-state-2"}})
    create_ordinal_2(api)
    assert [method for method, _ in api.requests] == ["POST", "GET", "POST"]
