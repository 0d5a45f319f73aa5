"""The pods' Leases as the operator reads and takes them (`operator.leases`), on the API emulator through the
operator's own client: a renewal is a change of the Lease's resourceVersion while its pod holds it; the take
replaces it conditionally on the token last seen (holder emptied, the generation in force annotated), creates
it taken when it is gone, and loses to a pod that renewed (or recreated it) first."""

from __future__ import annotations

from collections.abc import AsyncIterator
from datetime import UTC, datetime
from typing import Any

import kubernetes
import pytest
from op_testkit import NAMESPACE

from smoothscale.control import object_names
from smoothscale.operator.appref import AppRef
from smoothscale.operator.config import OperatorConfig
from smoothscale.operator.context import OperatorContext
from smoothscale.operator.leases import AppLeases, Take, pod_lease_seconds
from smoothscale.sandbox.emulator import RunningEmulator

APP = AppRef(NAMESPACE, "orders", "uid-orders")
NOW = datetime(2026, 11, 29, 12, 0, tzinfo=UTC)
TAKEN = object_names.TAKEN_AT_GENERATION_ANNOTATION


class Pods:
    """The pods' side, as the client library does it: each pod creates and renews its own Lease with a
    replace conditional on the resourceVersion it last saw."""

    def __init__(self, client: kubernetes.client.ApiClient) -> None:
        self.api = kubernetes.client.CoordinationV1Api(client)
        self.exception = kubernetes.client.ApiException

    def create(self, pod: str, holder: str | None = None, app: str = APP.name) -> str:
        body = {
            "metadata": {"name": object_names.pod_lease(pod), "labels": {object_names.LEASE_LABEL: app}},
            "spec": {"holderIdentity": pod if holder is None else holder, "leaseDurationSeconds": 10},
        }
        created = self.api.create_namespaced_lease(NAMESPACE, body)
        return str(created.metadata.resource_version)

    def renew(self, pod: str, version: str) -> str:
        """One renewal (a new renewTime), conditional on `version`; ApiException 409 when it is stale."""
        lease = self.get(pod)
        lease["metadata"]["resourceVersion"] = version
        lease["spec"]["holderIdentity"] = pod
        lease["spec"]["renewTime"] = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
        renewed = self.api.replace_namespaced_lease(object_names.pod_lease(pod), NAMESPACE, lease)
        return str(renewed.metadata.resource_version)

    def get(self, pod: str) -> dict[str, Any]:
        lease = self.api.read_namespaced_lease(object_names.pod_lease(pod), NAMESPACE)
        found: dict[str, Any] = self.api.api_client.sanitize_for_serialization(lease)
        return found

    def delete(self, pod: str) -> None:
        self.api.delete_namespaced_lease(object_names.pod_lease(pod), NAMESPACE)


@pytest.fixture()
def pods(k8s: kubernetes.client.ApiClient) -> Pods:
    return Pods(k8s)


@pytest.fixture()
async def leases(cluster: RunningEmulator) -> AsyncIterator[AppLeases]:
    config = OperatorConfig(kubeconfig=cluster.kubeconfig, journal_stdout=False, metrics_port=None)
    context = OperatorContext(config, clock=lambda: NOW)
    context.login()
    yield AppLeases(APP, context.api)
    await context.close()


def _seen(renewals: dict[str, str]) -> dict[str, tuple[str | None, datetime]]:
    return {pod: (token, NOW) for pod, token in renewals.items()}


async def test_renewals_are_the_versions_of_the_leases_their_own_pods_hold(
    pods: Pods, leases: AppLeases
) -> None:
    held = pods.create("orders-0")
    pods.create("orders-1", holder="")  # taken: held by no one
    pods.create("orders-2", holder="orders-9")  # not its pod's
    pods.create("billing-0", app="billing")  # another app's
    assert await leases.renewals() == {"orders-0": held}
    renewed = pods.renew("orders-0", held)
    assert renewed != held
    assert await leases.renewals() == {"orders-0": renewed}, "each renewal is a new token"


async def test_the_take_empties_the_holder_on_the_token_last_seen_and_the_pod_then_conflicts(
    pods: Pods, leases: AppLeases
) -> None:
    version = pods.create("orders-0")
    seen = _seen(await leases.renewals())
    assert await leases.take({"orders-0"}, seen, 7, 10) == Take(taken=("orders-0",))
    lease = pods.get("orders-0")
    assert lease["spec"].get("holderIdentity") is None
    assert lease["metadata"]["annotations"][TAKEN] == "7"
    assert lease["metadata"]["labels"] == {object_names.LEASE_LABEL: APP.name}
    assert lease["metadata"]["resourceVersion"] != version
    with pytest.raises(pods.exception) as late:
        pods.renew("orders-0", version)  # the pod's late renewal, on the version it last saw
    assert late.value.status == 409
    assert await leases.renewals() == {}, "a taken Lease is no renewal"
    taken_version = lease["metadata"]["resourceVersion"]
    assert await leases.take({"orders-0"}, seen, 8, 10) == Take(), "held by no one: not taken again"
    assert pods.get("orders-0")["metadata"]["resourceVersion"] == taken_version


async def test_a_pod_that_renews_between_the_expiry_and_the_take_keeps_its_lease(
    pods: Pods, leases: AppLeases
) -> None:
    first = pods.create("orders-0")
    other = pods.create("orders-1")
    seen = _seen(await leases.renewals())
    assert seen["orders-0"][0] == first
    renewed = pods.renew("orders-0", first)  # after the operator's read, before its take
    assert await leases.take({"orders-0", "orders-1"}, seen, 7, 10) == Take(kept_by="orders-0")
    lease = pods.get("orders-0")
    assert lease["spec"]["holderIdentity"] == "orders-0"
    assert TAKEN not in (lease["metadata"].get("annotations") or {})
    assert lease["metadata"]["resourceVersion"] == renewed
    assert pods.get("orders-1")["metadata"]["resourceVersion"] == other, "the take stopped at the conflict"


async def test_a_lease_gone_is_created_taken_unless_its_pod_created_it_first(
    pods: Pods, leases: AppLeases
) -> None:
    pods.create("orders-0")
    pods.create("orders-1")
    seen = _seen(await leases.renewals())
    pods.delete("orders-0")
    assert await leases.take({"orders-0"}, seen, 5, 12) == Take(taken=("orders-0",))
    lease = pods.get("orders-0")
    assert lease["spec"].get("holderIdentity") is None
    assert lease["spec"]["leaseDurationSeconds"] == 12
    assert lease["metadata"]["annotations"][TAKEN] == "5"
    assert lease["metadata"]["labels"] == {object_names.LEASE_LABEL: APP.name}
    assert [owner["uid"] for owner in lease["metadata"]["ownerReferences"]] == [APP.uid]

    pods.delete("orders-1")
    pods.create("orders-1")  # the pod recreated its Lease before the take
    assert await leases.take({"orders-1"}, seen, 5, 12) == Take(kept_by="orders-1")
    assert pods.get("orders-1")["spec"]["holderIdentity"] == "orders-1"


def test_a_pod_renews_a_lease_only_when_it_was_created_with_one() -> None:
    def pod(*env: dict[str, str]) -> dict[str, Any]:
        return {"spec": {"containers": [{"name": "app", "env": list(env)}, {"name": "proxy"}]}}

    assert pod_lease_seconds(pod({"name": object_names.LEASE_SECONDS_ENV, "value": "12"})) == 12
    assert pod_lease_seconds(pod({"name": object_names.APP_ENV, "value": "orders"})) is None
    assert pod_lease_seconds(pod()) is None
    assert pod_lease_seconds({}) is None
