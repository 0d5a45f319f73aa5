"""The operator on a real kube-apiserver, as the chart deploys it: its ServiceAccount, bound only by the
chart's rendered RBAC, with a token (not the administrator's certificate), and real worker processes run by
the kubelet stand-in on zone nodes.

A missing permission is a 403 from the server (the operator would stall, the test would time out, and the
audit log names the request); a granted permission never used over a whole lifecycle is reported, as the
emulated audit (tests/install/test_install_rbac_audit.py) reports it. The server also enforces what the
emulator let through: pods bound through `pods/binding`, owner references allowed only to who may update
the app's finalizers, garbage collection of what the app owns, claims released only once no pod uses them.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path

import kubernetes
import pytest
import yaml
from realkube_kit import Cluster, Json, sibling_kit, wait_for

from smoothscale.contract import shared_names as contract
from smoothscale.operator.access import Access
from smoothscale.sandbox import invariants
from smoothscale.sandbox.addresses import random_block
from smoothscale.sandbox.control_plane import RunningControlPlane
from smoothscale.sandbox.demo import APP, demo_tasks, worker_env
from smoothscale.sandbox.harness import Sandbox
from smoothscale.sandbox.observe import observe

pytestmark = pytest.mark.slow

install = sibling_kit("install", "install_testkit")
e2e = sibling_kit("sandbox_e2e", "sandbox_e2e_kit")


@pytest.fixture(scope="module")
def operator_account(control_plane: RunningControlPlane, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The chart's ServiceAccount, ClusterRole and binding (default values) applied; its kubeconfig."""
    documents = [
        doc
        for doc in install.render(None)
        if doc["kind"] in ("ServiceAccount", "ClusterRole", "ClusterRoleBinding")
    ]
    control_plane.kubectl("create", "namespace", install.RELEASE_NAMESPACE)
    control_plane.kubectl("apply", "--server-side", "-f", "-", input=yaml.safe_dump_all(documents))
    (account,) = [doc["metadata"]["name"] for doc in documents if doc["kind"] == "ServiceAccount"]
    return control_plane.service_account_kubeconfig(
        install.RELEASE_NAMESPACE, account, tmp_path_factory.mktemp("operator") / "kubeconfig"
    )


@pytest.fixture()
def sandbox(cluster: Cluster, operator_account: Path, tmp_path: Path) -> Iterator[Sandbox]:
    with Sandbox(
        tmp_path,
        api_server=cluster.control_plane,
        namespace=cluster.namespace,
        operator_kubeconfig=operator_account,
        worker_env=worker_env(speed=2.0),
        first_address=random_block(),
    ) as running:
        yield running


def operator_requests(control_plane: RunningControlPlane) -> list[Json]:
    """The audit log's entries for the operator's ServiceAccount."""
    (account,) = [doc["metadata"]["name"] for doc in install.render(None) if doc["kind"] == "ServiceAccount"]
    username = f"system:serviceaccount:{install.RELEASE_NAMESPACE}:{account}"
    entries = [json.loads(line) for line in control_plane.audit_log.read_text().splitlines() if line]
    return [entry for entry in entries if entry["user"]["username"] == username]


def access_of(entry: Json) -> Access | None:
    ref = entry.get("objectRef")
    if ref is None:
        return None  # discovery, /version: any authenticated user may read it
    resource = ref["resource"] + (f"/{ref['subresource']}" if ref.get("subresource") else "")
    return Access(ref.get("apiGroup", ""), resource, entry["verb"])


def test_a_lifecycle_as_the_charts_service_account(
    sandbox: Sandbox, cluster: Cluster, operator_account: Path
) -> None:
    run = e2e.Run(sandbox)
    run.start(replicas=3)
    # Kafka credentials from a Secret (get secrets): for a Kafka nobody listens for, so KafkaUnavailable
    # turns True and the lifecycle below goes on without Kafka.
    secret = {"metadata": {"name": "orders-kafka"}, "stringData": {"username": "u", "password": "p"}}
    cluster.core.create_namespaced_secret(cluster.namespace, secret)
    kafka = {
        "bootstrapServers": "127.0.0.1:1",
        "securityProtocol": "SASL_PLAINTEXT",
        "saslMechanism": "PLAIN",
        "secretRef": {"name": "orders-kafka"},
        "timeout": "1s",
    }
    sandbox.patch_app(APP, {"spec": {"kafka": kafka}})
    unreachable = wait_for(
        lambda: _condition(sandbox.app(APP), "KafkaUnavailable", "True"), timeout=30, what="KafkaUnavailable"
    )
    assert unreachable["reason"] == "KafkaUnreachable", unreachable
    # the kubelet stand-in: zone nodes registered, every pod bound to one and its worker running there
    zone_of = {
        node.metadata.name: node.metadata.labels[contract.ZONE_LABEL]
        for node in cluster.core.list_node().items
    }
    assert set(sandbox.zones) <= set(zone_of.values())
    for pod in cluster.core.list_namespaced_pod(cluster.namespace).items:
        assert pod.spec.node_name in zone_of and pod.status.phase == "Running" and pod.status.pod_ip
        assert {c.type: c.status for c in pod.status.conditions}["Ready"] == "True"

    # kubectl scale: the scale subresource, as an HPA or KEDA drives it
    out = run.step(
        "kubectl scale",
        e2e.PLANNED_MOVE_BOUND,
        lambda: cluster.kubectl("scale", f"sapp/{APP}", "--replicas=5"),
    )
    assert len(out.pods) == 5
    # the PodDisruptionBudget follows the replicas: as many may go at once as there are standbys, at least one
    budget = kubernetes.client.PolicyV1Api(cluster.api).read_namespaced_pod_disruption_budget(
        APP, cluster.namespace
    )
    standbys = sandbox.app(APP)["spec"]["assignment"]["numStandbys"]
    assert budget.spec.min_available == 5 - max(1, standbys)
    status, scale = cluster.request("GET", cluster.app_path(APP, "scale"))
    assert status == 200 and scale["spec"]["replicas"] == 5 and scale["status"]["replicas"] == 5
    selected = cluster.core.list_namespaced_pod(cluster.namespace, label_selector=scale["status"]["selector"])
    assert sorted(pod.metadata.name for pod in selected.items) == sorted(pod.name for pod in out.pods)
    hpa = yaml.safe_load((install.ROOT / "examples" / "hpa.yaml").read_text())
    hpa["metadata"]["namespace"] = cluster.namespace
    cluster.control_plane.kubectl("apply", "--server-side", "-f", "-", input=yaml.safe_dump(hpa))

    # spec.autoscaling Act beside that HPA: the operator refuses, naming it, and sets no replicas
    sandbox.patch_app(APP, {"spec": {"autoscaling": {"mode": "Act", "minReplicas": 3, "maxReplicas": 3}}})
    refused = wait_for(
        lambda: _condition(sandbox.app(APP), "Autoscaling", "False"), timeout=60, what="the refusal"
    )
    assert refused["reason"] == "ConflictingAutoscaler", refused
    assert f"HorizontalPodAutoscaler/{hpa['metadata']['name']}" in refused["message"], refused
    assert sandbox.app(APP)["spec"]["replicas"] == 5

    # scale-in by the operator's autoscaler once the HPA is gone (replicas above maxReplicas), through the
    # scale subresource; the leaving pods hand their tasks over before they go
    back = run.step(
        "scale-in",
        e2e.PLANNED_MOVE_BOUND,
        lambda: cluster.control_plane.kubectl(
            "delete", "hpa", hpa["metadata"]["name"], "-n", cluster.namespace
        ),
        also=lambda snapshot: len(snapshot.pods) == 3,
    )
    assert sandbox.app(APP)["spec"]["replicas"] == 3
    reasons = {event.reason for event in cluster.core.list_namespaced_event(cluster.namespace).items}
    assert {"ConflictingAutoscaler", "AutoscalerScaled"} <= reasons
    assert {pod.name for pod in back.pods} == {"orders-0", "orders-1", "orders-2"}
    assert {"orders-3", "orders-4"} <= {r["pod"] for r in sandbox.records() if r["kind"] == "leaving"}

    drained = run.step(
        "drain",
        e2e.PLANNED_MOVE_BOUND,
        lambda: sandbox.annotate("orders-1", {contract.LEAVING_ANNOTATION: "true"}),
        also=lambda snapshot: "orders-1" not in {pod.name for pod in snapshot.pods},
    )
    assert len(drained.pods) == 3

    before = {pod.revision for pod in drained.pods}
    template = {"spec": {"containers": [{"name": "app", "image": "example/orders:2"}]}}
    swapped = run.step(
        "swap", e2e.PLANNED_MOVE_BOUND, lambda: sandbox.patch_app(APP, {"spec": {"template": template}})
    )
    assert before.isdisjoint(pod.revision for pod in swapped.pods)
    run.finish(swapped)

    # the claims outlive the app unless it asks otherwise: asked, the operator makes them the app's
    assert all(not c.metadata.owner_references for c in _claims(cluster)), "whenDeleted: Retain"
    retention = {"storage": {"retentionPolicy": {"whenDeleted": "Delete"}}}
    sandbox.patch_app(APP, {"spec": retention})
    wait_for(
        lambda: all(c.metadata.owner_references for c in _claims(cluster)), timeout=30, what="claims owned"
    )

    # an invalid spec the schema cannot see (a topic read by two subtopologies): the last assignment runs on
    generation = sandbox.publication(APP).generation
    topology = sandbox.app(APP)["spec"]["topology"]
    topology["subtopologies"][1]["inputTopics"] = topology["subtopologies"][0]["inputTopics"]
    sandbox.patch_app(APP, {"spec": {"topology": topology}})
    invalid = wait_for(
        lambda: _condition(sandbox.app(APP), "InvalidSpec", "True"), timeout=30, what="InvalidSpec condition"
    )
    assert "inputTopics" in invalid["message"], invalid
    reasons = {event.reason for event in cluster.core.list_namespaced_event(cluster.namespace).items}
    assert "InvalidSpec" in reasons
    assert sandbox.publication(APP).generation == generation
    assert len(observe(sandbox, APP, "invalid").pods) == 3

    # deletion: the garbage collector removes what the app owned (pods, claims, the assignment ConfigMap)
    cluster.custom.delete_namespaced_custom_object(
        "smoothscale.io", "v1alpha1", cluster.namespace, "streamsapps", APP
    )
    wait_for(lambda: not _owned(cluster), timeout=60, what="pods, claims and ConfigMap collected")

    requests = operator_requests(cluster.control_plane)
    denied = [f"{e['verb']} {e['requestURI']}" for e in requests if e["responseStatus"]["code"] == 403]
    assert denied == []
    used = {access for access in map(access_of, requests) if access is not None}
    grants = install.granted(install.one(install.render(None), "ClusterRole"))
    assert used <= grants
    assert not grants - used - install.NOT_IN_A_LIFECYCLE, (
        f"granted, never used: {sorted(map(str, grants - used - install.NOT_IN_A_LIFECYCLE))}"
    )


def _condition(app: Json, kind: str, status: str) -> Json | None:
    conditions = (app.get("status") or {}).get("conditions") or []
    return next((c for c in conditions if c["type"] == kind and c["status"] == status), None)


def _claims(cluster: Cluster) -> list[kubernetes.client.V1PersistentVolumeClaim]:
    return list(cluster.core.list_namespaced_persistent_volume_claim(cluster.namespace).items)


def _owned(cluster: Cluster) -> list[str]:
    """What is left of the app's own objects in the test's namespace."""
    core, namespace = cluster.core, cluster.namespace
    left = [f"pod/{p.metadata.name}" for p in core.list_namespaced_pod(namespace).items]
    left += [f"pvc/{c.metadata.name}" for c in core.list_namespaced_persistent_volume_claim(namespace).items]
    left += [
        f"configmap/{c.metadata.name}"
        for c in core.list_namespaced_config_map(namespace).items
        if c.metadata.name == contract.assignment_configmap(APP)
    ]
    return left


def test_an_operator_killed_mid_migration_resumes_and_finishes_it(sandbox: Sandbox) -> None:
    e2e.Run(sandbox).operator_killed_mid_migration()


def test_an_eviction_the_budget_allows_is_replaced_and_one_beyond_it_is_refused(
    sandbox: Sandbox, cluster: Cluster
) -> None:
    """`kubectl drain` evicts through the Eviction API, which the kube-apiserver checks against the app's
    PodDisruptionBudget as kube-controller-manager's disruption controller keeps it: with one standby per
    task, one pod of three may go; a second eviction before the first pod is replaced is refused (429, which
    drain retries), and the operator creates the evicted pod again, its tasks moved to their standbys."""
    run = e2e.Run(sandbox)
    run.start(replicas=3)
    policy = kubernetes.client.PolicyV1Api(cluster.api)

    def allowed() -> int:
        budget = policy.read_namespaced_pod_disruption_budget(APP, cluster.namespace)
        return int(budget.status.disruptions_allowed or 0) if budget.status else 0

    wait_for(lambda: allowed() == 1, timeout=30, what="one disruption allowed")
    evicted = cluster.core.read_namespaced_pod("orders-0", cluster.namespace).metadata.uid

    def evict_two() -> None:
        _evict(cluster, "orders-0")
        with pytest.raises(kubernetes.client.ApiException) as refused:
            _evict(cluster, "orders-1")
        assert refused.value.status == 429, refused.value

    def replaced(_: object) -> bool:
        pods = {
            p.metadata.name: p.metadata.uid for p in cluster.core.list_namespaced_pod(cluster.namespace).items
        }
        return pods.get("orders-0") not in (None, evicted)

    started = time.time()
    last = run.step("eviction", e2e.CRASH_BOUND, evict_two, also=replaced)
    gaps = invariants.unprocessed_seconds(sandbox.records(), demo_tasks(), started, time.time())
    print(json.dumps({"eviction_longest_gap_seconds": round(max(gaps.values()), 2)}))
    assert len(last.pods) == 3
    # a pod evicted and created again under its name counts once the controller saw it terminating
    wait_for(lambda: allowed() == 1, timeout=150, what="the budget whole again")
    run.finish(last)


def _evict(cluster: Cluster, pod: str) -> None:
    metadata = kubernetes.client.V1ObjectMeta(name=pod, namespace=cluster.namespace)
    cluster.core.create_namespaced_pod_eviction(
        pod, cluster.namespace, kubernetes.client.V1Eviction(metadata=metadata)
    )
