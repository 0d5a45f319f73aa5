"""The pods' Leases as the operator reads and takes them (`operator.leases`), on the API emulator through the
operator's own client: a renewal is a change of the Lease's resourceVersion while its pod holds it; the take
replaces it conditionally on the token last seen (holder emptied, the generation in force annotated), creates
it taken when it is gone, and loses to a pod that renewed (or recreated it) first."""

from __future__ import annotations

import threading
import time
from collections.abc import AsyncIterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import kubernetes
import pytest
from op_testkit import NAMESPACE, Kubectl, actives, read_journal, settled_balance, streamsapp, wait_for

from smoothscale.contract.publication import Publication
from smoothscale.control import object_names
from smoothscale.operator.appref import AppRef
from smoothscale.operator.config import OperatorConfig
from smoothscale.operator.context import OperatorContext
from smoothscale.operator.leases import AppLeases, Take, pod_lease_seconds
from smoothscale.sandbox.emulator import RunningEmulator
from smoothscale.sandbox.emulator.memoryruntime import MemoryRuntime

APP = AppRef(NAMESPACE, "orders", "uid-orders")
NOW = datetime(2026, 11, 29, 12, 0, tzinfo=UTC)
TAKEN = object_names.TAKEN_AT_GENERATION_ANNOTATION
WAITING = object_names.WAITING_FOR_GENERATION_ANNOTATION


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


class Renewer:
    """The app's pods renewing their Leases every 0.3 s from a thread, as the client library does (a lease of
    3 s renewed every second would do; faster keeps the test short), but for the pods told to stop: they
    cannot reach the API server."""

    def __init__(self, cluster: RunningEmulator) -> None:
        self._client = kubernetes.config.new_client_from_config(config_file=str(cluster.kubeconfig))
        self.pods = Pods(self._client)
        self.core = kubernetes.client.CoreV1Api(self._client)
        self.stopped: set[str] = set()
        self.versions: dict[str, str] = {}
        self.lock = threading.Lock()
        self._done = threading.Event()
        self._thread = threading.Thread(target=self._run, name="lease-renewer", daemon=True)

    def __enter__(self) -> Renewer:
        self._thread.start()
        return self

    def __exit__(self, *_: object) -> None:
        self._done.set()
        self._thread.join(timeout=10)
        self._client.close()

    def renew(self, pod: str) -> None:
        """One renewal of `pod`'s Lease now (created when it has none)."""
        with self.lock:
            version = self.versions.get(pod)
            try:
                self.versions[pod] = (
                    self.pods.create(pod) if version is None else self.pods.renew(pod, version)
                )
            except self.pods.exception as error:
                if error.status not in (404, 409):
                    raise
                self.versions.pop(pod, None)  # created again or re-read next time (a test's pod does)

    def _run(self) -> None:
        while not self._done.wait(0.3):
            listed = self.core.list_namespaced_pod(
                NAMESPACE, label_selector=f"{object_names.APP_LABEL}=orders"
            )
            for pod in sorted(item.metadata.name for item in listed.items):
                if pod not in self.stopped:
                    self.renew(pod)


def _leased_app() -> dict[str, Any]:
    app = streamsapp(replicas=3, partitions=6)
    app["spec"]["failover"] = {"leaseSeconds": 3}
    return app


def _kinds(journal: Path, kind: str) -> list[dict[str, Any]]:
    return [record for record in read_journal(journal) if record["kind"] == kind]


def test_a_pod_whose_lease_expired_has_its_lease_taken_before_its_tasks_fail_over(
    kube: Kubectl, fake: MemoryRuntime, run_operator, cluster: RunningEmulator, journal_path: Path
) -> None:
    with Renewer(cluster) as renewer, run_operator():
        kube.apply(_leased_app())
        before = settled_balance(kube, fake, 3, 6)
        env = {e.name: e.value for e in kube.pods()["orders-0"].spec.containers[0].env}
        assert env[object_names.LEASE_SECONDS_ENV] == "3"
        renewer.stopped.add("orders-0")  # cut off from the API server: it renews no more and, once its
        with fake.lock:  # lease runs out, stops processing by itself (what the client library does)
            lost = fake.pods["orders-0"]
            lost.frozen, lost.active = True, set()

        def failed_over() -> Publication | None:
            published = kube.publication()
            if published is None or published.generation == before.generation:
                return None
            held = published.assignment.get("orders-0")
            return published if held is None or not held.active else None

        try:
            after: Publication = wait_for(failed_over, timeout=30, what="orders-0's actives failed over")
        finally:
            lost.frozen = False  # its hung metrics request ends (the kubelet stops it at the end)
        lost_tasks = {task for task, pod in actives(before).items() if pod == "orders-0"}
        assert lost_tasks and all(
            actives(after).get(task) not in (None, "orders-0") for task in lost_tasks
        ), "orders-0's actives start on their standbys at once"
        lease = renewer.pods.get("orders-0")
        assert lease["spec"].get("holderIdentity") is None
        taken_at = int(lease["metadata"]["annotations"][object_names.TAKEN_AT_GENERATION_ANNOTATION])
        assert before.generation <= taken_at < after.generation, (
            "taken before the generation that failed over"
        )
        taken = wait_for(lambda: _kinds(journal_path, "lease-taken"), what="the take journaled")
        assert taken[0]["pods"] == ["orders-0"] and taken[0]["generation"] == taken_at
        assert "LeaseExpired" in kube.reasons()


def test_a_pod_that_renews_before_the_take_is_not_failed_over(
    kube: Kubectl,
    fake: MemoryRuntime,
    run_operator,
    cluster: RunningEmulator,
    journal_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """orders-0 renews nothing for a lease (an API server it cannot reach), and renews again just as the
    operator is about to take its Lease: the take conflicts, nothing is published, and the next rounds see
    it renewing: its tasks stay where they are, and no Event said its lease expired."""
    take = AppLeases.take
    raced: list[str] = []

    async def renewed_first(self: AppLeases, pods: Any, seen: Any, generation: int, seconds: int) -> Take:
        if "orders-0" in pods and not raced:
            raced.append("orders-0")
            renewer.renew("orders-0")  # the pod's late renewal, between the expiry and the take
            renewer.stopped.discard("orders-0")
        return await take(self, pods, seen, generation, seconds)

    monkeypatch.setattr(AppLeases, "take", renewed_first)
    with Renewer(cluster) as renewer, run_operator():
        kube.apply(_leased_app())
        before = settled_balance(kube, fake, 3, 6)
        renewer.stopped.add("orders-0")
        kept = wait_for(lambda: _kinds(journal_path, "lease-kept"), timeout=30, what="the take conflicting")
        assert kept[0]["pod"] == "orders-0"
        time.sleep(4)  # more than a lease: orders-0 renews, and is never taken for gone again
        published = kube.publication()
        assert published is not None and published.generation == before.generation, "nothing published"
        assert actives(published) == actives(before)
        lease = renewer.pods.get("orders-0")
        assert lease["spec"]["holderIdentity"] == "orders-0"
        assert object_names.TAKEN_AT_GENERATION_ANNOTATION not in (lease["metadata"].get("annotations") or {})
        assert not _kinds(journal_path, "lease-taken")
        assert "LeaseKept" in kube.reasons() and "LeaseExpired" not in kube.reasons()


async def test_the_generation_a_pod_waits_for_is_read_from_the_leases_its_pods_hold(
    pods: Pods, leases: AppLeases
) -> None:
    for pod, holder in (("orders-0", None), ("orders-1", ""), ("orders-2", None)):
        pods.create(pod, holder=holder)
    await leases.renewals()
    assert leases.waited_for() == 0
    for pod, waited in (("orders-0", "5"), ("orders-1", "9"), ("orders-2", "4")):
        lease = pods.get(pod)
        lease["metadata"]["annotations"] = {WAITING: waited}
        pods.api.replace_namespaced_lease(object_names.pod_lease(pod), NAMESPACE, lease)
    await leases.renewals()
    assert leases.waited_for() == 5, "orders-1's Lease is held by no pod: it waits for nothing yet"


def test_a_pod_waiting_for_a_generation_the_take_never_published_gets_one(
    kube: Kubectl, fake: MemoryRuntime, run_operator, cluster: RunningEmulator, journal_path: Path
) -> None:
    """The take's generation never came (its write failed, and the pod took its Lease back before the next
    round): the pod waits for a newer generation than the one in force, which an unchanged plan would never
    make. The operator publishes the next one, with the same assignment."""
    with Renewer(cluster) as renewer, run_operator():
        kube.apply(_leased_app())
        before = settled_balance(kube, fake, 3, 6)
        wait_for(lambda: "orders-0" in renewer.versions, what="orders-0's Lease")  # a loaded renewer lags
        with renewer.lock:
            lease = renewer.pods.get("orders-0")
            lease["metadata"]["annotations"] = {WAITING: str(before.generation + 1)}
            replaced = renewer.pods.api.replace_namespaced_lease(
                object_names.pod_lease("orders-0"), NAMESPACE, lease
            )
            renewer.versions["orders-0"] = str(replaced.metadata.resource_version)
        after = wait_for(
            lambda: (p := kube.publication()) is not None and p.generation > before.generation and p,
            timeout=20,
            what="the generation orders-0 waits for",
        )
        assert after.generation == before.generation + 1
        assert actives(after) == actives(before), "the same assignment, a newer generation"
        assert _kinds(journal_path, "lease-republish")[0]["waitedFor"] == before.generation + 1
