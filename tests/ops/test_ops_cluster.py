"""The operations commands against the emulator, with the real operator and fake pods running the app."""

from __future__ import annotations

from pathlib import Path

import kubernetes
import pytest
import yaml
from click.testing import CliRunner
from ops_testkit import NAMESPACE, SAPP, balanced, publication, smoothscale, streamsapp, wait_for

from smoothscale.cli.main import cli
from smoothscale.operator.context import OperatorContext
from smoothscale.sandbox.emulator import RunningEmulator
from smoothscale.sandbox.emulator.memoryruntime import MemoryRuntime


@pytest.fixture()
def running(
    k8s: kubernetes.client.ApiClient, fake: MemoryRuntime, operator: OperatorContext
) -> kubernetes.client.CustomObjectsApi:
    """`orders`, 3 pods, 12 tasks, balanced and settled."""
    custom = kubernetes.client.CustomObjectsApi(k8s)
    core = kubernetes.client.CoreV1Api(k8s)
    custom.create_namespaced_custom_object(*SAPP, streamsapp(replicas=3))
    wait_for(lambda: balanced(publication(core), 3, 12), what="3 balanced pods")
    return custom


def test_unknown_names_and_malformed_percentages_exit_2_naming_them(cluster: RunningEmulator) -> None:
    for args, named in [
        (["status", "nope"], "StreamsApp 'nope' not found in namespace 'default'"),
        (["scale", "nope", "--to", "3"], "StreamsApp 'nope' not found"),
        (["swap", "nope"], "StreamsApp 'nope' not found"),
        (["explain", "nope", "0_1"], "StreamsApp 'nope' not found"),
        (["drain", "nope-0"], "pod 'nope-0' not found in namespace 'default'"),
        (["scale", "nope", "--to", "8o%"], "--to '8o%'"),
        (["scale", "nope", "--to", "2.5"], "whole number"),
        (["status", "orders", "-n", "elsewhere"], "StreamsApp 'orders' not found in namespace 'elsewhere'"),
        (["status", "orders", "--context", "nowhere"], "context 'nowhere' is not in the kubeconfig"),
    ]:
        result = smoothscale(cluster, *args)
        assert result.exit_code == 2, (args, result.output)
        assert named in result.output, (args, result.output)


def test_the_namespace_defaults_to_the_contexts(cluster: RunningEmulator, tmp_path: Path) -> None:
    config = yaml.safe_load(cluster.kubeconfig.read_text())
    for entry in config["contexts"]:
        entry["context"]["namespace"] = "team-a"
    kubeconfig = tmp_path / "kubeconfig"
    kubeconfig.write_text(yaml.safe_dump(config))
    result = CliRunner().invoke(cli, ["status", "orders", "--kubeconfig", str(kubeconfig)])
    assert result.exit_code == 2 and "not found in namespace 'team-a'" in result.output, result.output


def test_scale_through_the_scale_subresource_as_kubectl_and_an_hpa_do(
    cluster: RunningEmulator, k8s: kubernetes.client.ApiClient, running: kubernetes.client.CustomObjectsApi
) -> None:
    core = kubernetes.client.CoreV1Api(k8s)
    dry = smoothscale(cluster, "scale", "orders", "--to", "200%", "--dry-run")
    assert dry.exit_code == 0 and "would scale StreamsApp orders from 3 to 6 replicas" in dry.output
    assert running.get_namespaced_custom_object(*SAPP, "orders")["spec"]["replicas"] == 3

    # `kubectl scale sapp/orders --replicas 6`
    running.patch_namespaced_custom_object_scale(*SAPP, "orders", {"spec": {"replicas": 6}})
    wait_for(lambda: balanced(publication(core), 6, 12), timeout=30, what="6 balanced pods")

    # An HPA reads the Scale: the selector string finds exactly the app's pods.
    def scale_status() -> dict[str, object]:
        return dict(running.get_namespaced_custom_object_scale(*SAPP, "orders")["status"])

    status = wait_for(lambda: (s := scale_status())["replicas"] == 6 and s, what="status.replicas 6")
    pods = core.list_namespaced_pod(NAMESPACE, label_selector=status["selector"]).items
    assert sorted(p.metadata.name for p in pods) == [f"orders-{i}" for i in range(6)]

    # The drafts' scale-down: to 50% of 6 pods.
    result = smoothscale(cluster, "scale", "orders", "--to", "50%")
    assert result.exit_code == 0, result.output
    assert running.get_namespaced_custom_object_scale(*SAPP, "orders")["spec"]["replicas"] == 3
    wait_for(lambda: balanced(publication(core), 3, 12), timeout=30, what="back to 3 pods")


def test_drain_status_explain_and_swap(
    cluster: RunningEmulator,
    k8s: kubernetes.client.ApiClient,
    fake: MemoryRuntime,
    running: kubernetes.client.CustomObjectsApi,
) -> None:
    core = kubernetes.client.CoreV1Api(k8s)
    # 12 tasks at 10 records/s, 4 on each pod: 120/s over pods doing 40/s each -> 3 pods recommended.
    fake.process_rates = {f"0_{p}": 10.0 for p in range(12)}

    def recommended() -> object:
        status = running.get_namespaced_custom_object(*SAPP, "orders").get("status") or {}
        return (status.get("autoscaling") or {}).get("recommendedReplicas")

    wait_for(lambda: recommended() == 3, what="status.autoscaling.recommendedReplicas 3 once the lag is gone")
    status = smoothscale(cluster, "status", "orders")
    assert status.exit_code == 0, status.output
    lines = status.output.splitlines()
    assert lines[0].startswith("StreamsApp orders: ") and "generation" in lines[0]
    assert lines[2] == "migrating: no; recommended replicas: 3"
    rows = {line.split()[0]: line.split() for line in lines if line.startswith("orders-")}
    assert sorted(rows) == ["orders-0", "orders-1", "orders-2"]
    assert sum(int(row[2]) for row in rows.values()) == 12  # ACTIVE
    assert {row[6] for row in rows.values()} == {"zone-a", "zone-b", "zone-c"}

    explained = smoothscale(cluster, "explain", "orders", "0_4")
    assert explained.exit_code == 0, explained.output
    assert "task 0_4 (generation" in explained.output and "active on orders-" in explained.output
    assert "why: kept on orders-" in explained.output and "stable" in explained.output
    assert smoothscale(cluster, "explain", "orders", "7_1").exit_code == 2

    assert "would annotate pod orders-1" in smoothscale(cluster, "drain", "orders-1", "--dry-run").output
    assert not (core.read_namespaced_pod("orders-1", NAMESPACE).metadata.annotations or {}).get(
        "smoothscale.io/leaving"
    )
    assert smoothscale(cluster, "drain", "orders-1").exit_code == 0
    wait_for(
        lambda: "orders-1" not in (publication(core) or {}).assignment, timeout=30, what="orders-1 empty"
    )  # type: ignore[union-attr]
    wait_for(lambda: balanced(publication(core), 3, 12), timeout=30, what="a replacement for orders-1")
    assert "orders-3" in (publication(core).assignment)  # type: ignore[union-attr]

    before = running.get_namespaced_custom_object(*SAPP, "orders")["metadata"]["generation"]
    assert "would replace every pod" in smoothscale(cluster, "swap", "orders", "--dry-run").output
    assert running.get_namespaced_custom_object(*SAPP, "orders")["metadata"]["generation"] == before
    swapped = smoothscale(cluster, "swap", "orders")
    assert swapped.exit_code == 0, swapped.output
    old = set(publication(core).assignment)  # type: ignore[union-attr]

    def replaced() -> bool:
        published = publication(core)
        return balanced(published, 3, 12) and not (set(published.assignment) & old)  # type: ignore[union-attr]

    wait_for(replaced, timeout=40, what="every pod replaced")
