"""The kubelet stand-in with real worker processes: binding, IPs, readiness, crashes, deletion, no orphans."""

from __future__ import annotations

import os
import re
import signal
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import kubernetes
import pytest
from sandbox_testkit import NAMESPACE, configmap_body, eventually, publication, publish

from smoothscale.contract import shared_names as contract
from smoothscale.sandbox.addresses import random_block
from smoothscale.sandbox.emulator import RunningEmulator
from smoothscale.sandbox.kubelet import FINALIZER, Kubelet
from smoothscale.sandbox.podruntime import Launch
from smoothscale.sandbox.processruntime import Command, ProcessRuntime, pod_env, worker_runtime
from smoothscale.sandbox.records import read_records

APP = "orders"
PORT = 9400
FAST = {
    "SMOOTHSCALE_INITIAL_OFFSET": "2000",
    "SMOOTHSCALE_TICK_SECONDS": "0.05",
    "SMOOTHSCALE_LOG_LEVEL": "WARNING",
}


@pytest.fixture()
def kubelet(cluster: RunningEmulator, core: kubernetes.client.CoreV1Api, tmp_path: Path) -> Iterator[Kubelet]:
    custom = kubernetes.client.CustomObjectsApi(core.api_client)
    app = {
        "apiVersion": "smoothscale.io/v1alpha1",
        "kind": "StreamsApp",
        "metadata": {"name": APP},
        "spec": {"replicas": 0, "metrics": {"port": PORT}},
    }
    custom.create_namespaced_custom_object("smoothscale.io", "v1alpha1", NAMESPACE, "streamsapps", app)
    records = tmp_path / "records.jsonl"
    runtime = worker_runtime(
        cluster.kubeconfig, record_file=records, worker_env=FAST, first_address=random_block()
    )
    with Kubelet(
        cluster.kubeconfig, tmp_path / "sandbox", runtime, record_file=records, restart_backoff_seconds=0.1
    ) as running:
        yield running


def _pod(name: str, claim: str | None = None, **spec: Any) -> dict[str, Any]:
    volumes = [{"name": "state", "persistentVolumeClaim": {"claimName": claim}}] if claim else []
    return {
        "metadata": {"name": name, "labels": {contract.APP_LABEL: APP}},
        "spec": {"containers": [{"name": "app", "image": "example/orders:1"}], "volumes": volumes, **spec},
    }


def _claim(name: str) -> dict[str, Any]:
    return {
        "metadata": {"name": name},
        "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}},
    }


def _ready(core: kubernetes.client.CoreV1Api, name: str) -> Any:
    pod = core.read_namespaced_pod(name, NAMESPACE)
    conditions = (pod.status.conditions if pod.status else None) or []
    return pod if any(c.type == "Ready" and c.status == "True" for c in conditions) else None


def _alive(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().split(") ")[1][0] != "Z"
    except (FileNotFoundError, IndexError):
        return False


def _records(tmp_path: Path, kind: str, pod: str) -> list[dict[str, Any]]:
    return [r for r in read_records(tmp_path / "records.jsonl") if r["kind"] == kind and r["pod"] == pod]


def test_pods_get_a_zone_node_an_ip_of_their_own_and_a_ready_worker(
    kubelet: Kubelet, core: kubernetes.client.CoreV1Api
) -> None:
    nodes = {node.metadata.name: node.metadata.labels[contract.ZONE_LABEL] for node in core.list_node().items}
    assert nodes == {"sandbox-zone-a": "zone-a", "sandbox-zone-b": "zone-b", "sandbox-zone-c": "zone-c"}
    core.create_namespaced_pod(NAMESPACE, _pod("orders-0", nodeSelector={contract.ZONE_LABEL: "zone-c"}))
    core.create_namespaced_pod(NAMESPACE, _pod("orders-1"))
    pods = [eventually(lambda name=name: _ready(core, name), timeout=30) for name in ("orders-0", "orders-1")]

    assert [pod.spec.node_name for pod in pods] == ["sandbox-zone-c", "sandbox-zone-a"]
    ips = [pod.status.pod_ip for pod in pods]
    assert len(set(ips)) == 2 and all(ip.startswith("127.") for ip in ips)
    assert {pod.status.phase for pod in pods} == {"Running"}
    assert all(FINALIZER in pod.metadata.finalizers for pod in pods)
    for ip in ips:  # the operator's scrape: the pod's IP, the app's port
        with urllib.request.urlopen(f"http://{ip}:{PORT}/metrics", timeout=5) as response:
            assert contract.GENERATION_METRIC in response.read().decode()
    assert set(kubelet.worker_pids()) == {"default/orders-0", "default/orders-1"}


def test_a_crash_restarts_the_worker_in_place_with_or_without_its_volume(
    kubelet: Kubelet, core: kubernetes.client.CoreV1Api, tmp_path: Path
) -> None:
    core.create_namespaced_persistent_volume_claim(NAMESPACE, _claim("orders-state-0"))
    core.create_namespaced_pod(NAMESPACE, _pod("orders-0", claim="orders-state-0"))
    publish(core, APP, configmap_body(APP, publication(1, **{"orders-0": {"active": ["0_0"]}})))
    ip = eventually(lambda: _ready(core, "orders-0"), timeout=30).status.pod_ip
    eventually(lambda: _records(tmp_path, "lease", "orders-0"), timeout=20)
    assert core.read_namespaced_persistent_volume_claim("orders-state-0", NAMESPACE).status.phase == "Bound"

    first = kubelet.crash("orders-0")
    assert not _alive(first)
    eventually(lambda: len(_records(tmp_path, "started", "orders-0")) == 2, timeout=20)
    assert _records(tmp_path, "started", "orders-0")[-1]["tasks"]["0_0"] >= 2000  # the volume survived
    pod = eventually(lambda: _ready(core, "orders-0"), timeout=20)
    assert pod.status.container_statuses[0].restart_count == 1 and pod.status.pod_ip == ip

    kubelet.crash("orders-0", lose_volume=True)
    eventually(lambda: len(_records(tmp_path, "started", "orders-0")) == 3, timeout=20)
    assert _records(tmp_path, "started", "orders-0")[-1]["tasks"] == {}  # rebuilt from nothing
    assert [r["code"] for r in _records(tmp_path, "exited", "orders-0")] == [-9, -9]

    kubelet.crash("orders-0", fail=True)
    failed = eventually(lambda: core.read_namespaced_pod("orders-0", NAMESPACE).status.phase == "Failed")
    assert failed and "default/orders-0" not in kubelet.worker_pids()


def test_deletion_stops_the_worker_before_the_pod_goes_and_claims_outlive_pods(
    kubelet: Kubelet, core: kubernetes.client.CoreV1Api, tmp_path: Path
) -> None:
    core.create_namespaced_pod(NAMESPACE, _pod("orders-0", claim="orders-state-0"))
    assert eventually(lambda: core.read_namespaced_pod("orders-0", NAMESPACE).spec.node_name)
    assert not kubelet.worker_pids()  # Pending: its claim does not exist yet
    core.create_namespaced_persistent_volume_claim(NAMESPACE, _claim("orders-state-0"))
    publish(core, APP, configmap_body(APP, publication(1, **{"orders-0": {"standby": ["0_0"]}})))
    eventually(lambda: _records(tmp_path, "restored", "orders-0"), timeout=30)
    pid = kubelet.worker_pids()["default/orders-0"]

    core.delete_namespaced_pod("orders-0", NAMESPACE)
    terminating = core.read_namespaced_pod("orders-0", NAMESPACE)  # held by the finalizer ...
    assert terminating.metadata.deletion_timestamp is not None
    eventually(lambda: not core.list_namespaced_pod(NAMESPACE).items, timeout=15)
    assert not _alive(pid)  # ... until its worker was gone
    assert _records(tmp_path, "exited", "orders-0")[-1]["pid"] == pid
    volume = kubelet.claim_dir("orders-state-0")
    assert (volume / "0_0" / "state.json").exists()

    core.create_namespaced_pod(NAMESPACE, _pod("orders-0", claim="orders-state-0"))
    eventually(lambda: len(_records(tmp_path, "started", "orders-0")) == 2, timeout=30)
    assert _records(tmp_path, "started", "orders-0")[-1]["tasks"]["0_0"] > 0
    core.delete_namespaced_pod("orders-0", NAMESPACE)
    core.delete_namespaced_persistent_volume_claim("orders-state-0", NAMESPACE)
    eventually(lambda: not volume.exists(), timeout=15)


def test_a_deleted_pod_goes_even_when_the_api_fails_its_release_and_removal(
    kubelet: Kubelet, cluster: RunningEmulator, core: kubernetes.client.CoreV1Api
) -> None:
    """A kubelet retries the end of a graceful deletion at every pass: a pod whose finalizer release and
    final DELETE met 500s must not stay terminating for ever (chaos found one holding its name)."""
    core.create_namespaced_pod(NAMESPACE, _pod("orders-0", terminationGracePeriodSeconds=1))
    assert eventually(lambda: _ready(core, "orders-0"), timeout=30)
    kubelet.freeze("orders-0", NAMESPACE)  # ignores SIGTERM: killed after its 1 s, once the faults are armed
    core.delete_namespaced_pod("orders-0", NAMESPACE)
    faults = cluster.emulator.faults
    faults.error(times=3, method="DELETE", path=re.compile(r"/pods/orders-0$"))
    faults.error(times=3, method="PATCH", path=re.compile(r"/pods/orders-0$"))
    assert eventually(lambda: not core.list_namespaced_pod(NAMESPACE).items, timeout=20)
    assert faults.armed == []  # each failed at least three times first


def test_pods_seen_together_spread_over_the_zones_and_close_stops_every_worker(
    cluster: RunningEmulator, core: kubernetes.client.CoreV1Api, tmp_path: Path
) -> None:
    names = ("orders-0", "orders-1", "orders-2")
    for name in names:  # before the kubelet starts: it binds them all in its first pass
        core.create_namespaced_pod(NAMESPACE, _pod(name))
    runtime = worker_runtime(cluster.kubeconfig, worker_env=FAST, first_address=random_block())
    with Kubelet(cluster.kubeconfig, tmp_path / "sandbox", runtime) as kubelet:
        eventually(lambda: len(kubelet.worker_pids()) == 3, timeout=30)
        nodes = {pod.metadata.name: pod.spec.node_name for pod in core.list_namespaced_pod(NAMESPACE).items}
        assert sorted(nodes.values()) == ["sandbox-zone-a", "sandbox-zone-b", "sandbox-zone-c"]
        pids = list(kubelet.worker_pids().values())
    assert not any(_alive(pid) for pid in pids)
    assert all(not pod.metadata.finalizers for pod in core.list_namespaced_pod(NAMESPACE).items)


def _metrics_answer(ip: str) -> bool:
    try:
        with urllib.request.urlopen(f"http://{ip}:{PORT}/metrics", timeout=0.5) as response:
            return bool(response.status == 200)
    except OSError:
        return False


def test_a_lost_zone_runs_nothing_until_restored_and_a_frozen_worker_stalls(
    kubelet: Kubelet, core: kubernetes.client.CoreV1Api, tmp_path: Path
) -> None:
    """The chaos runner's faults (issue 9): a zone outage, and a worker frozen (its metrics hang), the freeze
    recorded (a frozen process logs nothing: its runs end there, `streams_task_log`)."""
    core.create_namespaced_pod(NAMESPACE, _pod("orders-0", nodeSelector={contract.ZONE_LABEL: "zone-a"}))
    eventually(lambda: _ready(core, "orders-0"), timeout=30)
    first = kubelet.worker_pids()[f"{NAMESPACE}/orders-0"]

    assert kubelet.lose_zone("zone-a") == ["orders-0"]
    assert not _alive(first)
    core.create_namespaced_pod(NAMESPACE, _pod("orders-1"))
    other = eventually(lambda: _ready(core, "orders-1"), timeout=30)
    assert other.spec.node_name != "sandbox-zone-a", "nothing is bound to a lost zone"
    assert f"{NAMESPACE}/orders-0" not in kubelet.worker_pids()

    kubelet.restore_zone("zone-a")
    eventually(lambda: kubelet.worker_pids().get(f"{NAMESPACE}/orders-0"), timeout=20)

    ip = other.status.pod_ip
    kubelet.freeze("orders-1")
    assert not _metrics_answer(ip)
    kubelet.freeze("orders-1", frozen=False)
    eventually(lambda: _metrics_answer(ip), timeout=10)
    pid = kubelet.worker_pids()[f"{NAMESPACE}/orders-1"]
    freezes = [r for r in read_records(tmp_path / "records.jsonl") if r["kind"] in ("frozen", "thawed")]
    assert [(r["kind"], r["pod"], r["pid"]) for r in freezes] == [
        ("frozen", "orders-1", pid),
        ("thawed", "orders-1", pid),
    ]


_SERVER = f"""
import http.server, os
body = ("{contract.GENERATION_METRIC} 7\\n# " + os.environ["{contract.POD_NAME_ENV}"] + " says "
        + os.environ["GREETING"] + "\\n").encode()
class Metrics(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        self.send_response(200)
        self.end_headers()
        self.wfile.write(body)
    def log_message(self, *args):
        pass
http.server.HTTPServer((os.environ["HOST"], int(os.environ["PORT"])), Metrics).serve_forever()
"""


def _metrics_server(launch: Launch) -> Command:
    """Another app than the sample worker: what a pod runs is the command builder's choice alone."""
    port = str(launch.settings.metrics_port)
    return Command(
        [sys.executable, "-c", _SERVER], {**os.environ, **pod_env(launch), "HOST": launch.ip, "PORT": port}
    )


def test_any_command_can_run_as_the_pods_process(
    cluster: RunningEmulator, core: kubernetes.client.CoreV1Api, tmp_path: Path
) -> None:
    """A `CommandBuilder` decides the argv and environment (here a tiny metrics server, given the pod's own
    environment, one variable from a ConfigMap, which the container waits for as a kubelet's does); the
    stand-in does the rest as for the worker: the pod's IP and port, Ready once the process reports a
    generation, and a deletion that stops the process before the pod goes."""
    runtime = ProcessRuntime(_metrics_server, first_address=random_block())
    with Kubelet(cluster.kubeconfig, tmp_path / "sandbox", runtime) as kubelet:
        pod = _pod("orders-0")
        pod["spec"]["containers"][0]["env"] = [
            {"name": "WHO", "valueFrom": {"configMapKeyRef": {"name": "greetings", "key": "who"}}},
            {"name": "GREETING", "value": "hello $(WHO)"},
        ]
        core.create_namespaced_pod(NAMESPACE, pod)
        time.sleep(1.0)
        assert not kubelet.worker_pids(), "no container before its ConfigMap exists"
        core.create_namespaced_config_map(
            NAMESPACE, {"metadata": {"name": "greetings"}, "data": {"who": "you"}}
        )
        ip = eventually(lambda: _ready(core, "orders-0"), timeout=30).status.pod_ip
        url = f"http://{ip}:{contract.DEFAULT_METRICS_PORT}/metrics"  # no StreamsApp: the default port
        with urllib.request.urlopen(url, timeout=5) as response:
            assert "# orders-0 says hello you" in response.read().decode()
        pid = kubelet.worker_pids()[f"{NAMESPACE}/orders-0"]
        core.delete_namespaced_pod("orders-0", NAMESPACE)
        eventually(lambda: not core.list_namespaced_pod(NAMESPACE).items, timeout=30)
        assert not _alive(pid)


_SLOW_CLOSE = f"""
import http.server, os, signal, sys, threading, time
def close(*_):
    time.sleep(float(os.environ["CLOSE_SECONDS"]))  # an exactly-once close: commit, then close the clients
    os._exit(0)
signal.signal(signal.SIGTERM, close)
class Metrics(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        self.send_response(200)
        self.end_headers()
        self.wfile.write(b"{contract.GENERATION_METRIC} 1\\n")
    def log_message(self, *args):
        pass
http.server.HTTPServer((os.environ["HOST"], int(os.environ["PORT"])), Metrics).serve_forever()
"""


def _slow_close(launch: Launch) -> Command:
    """A process that takes `CLOSE_SECONDS` to stop after SIGTERM, as a Kafka Streams instance closing."""
    env = {**os.environ, **pod_env(launch), "HOST": launch.ip, "PORT": str(launch.settings.metrics_port)}
    return Command([sys.executable, "-c", _SLOW_CLOSE], env)


def test_a_deleted_pod_gets_its_own_grace_period_as_from_a_kubelet(
    cluster: RunningEmulator, core: kubernetes.client.CoreV1Api, tmp_path: Path
) -> None:
    """No cap of its own: a pod whose close takes 6 s (the stand-in used to allow 5) finishes it within its
    `terminationGracePeriodSeconds` of 20 and exits 0; one with 1 s is killed after 1 s."""
    records = tmp_path / "records.jsonl"
    runtime = ProcessRuntime(_slow_close, first_address=random_block())
    with Kubelet(cluster.kubeconfig, tmp_path / "sandbox", runtime, record_file=records):
        for name, grace in (("orders-0", 20), ("orders-1", 1)):
            pod = _pod(name, terminationGracePeriodSeconds=grace)
            pod["spec"]["containers"][0]["env"] = [{"name": "CLOSE_SECONDS", "value": "6"}]
            core.create_namespaced_pod(NAMESPACE, pod)
            eventually(lambda name=name: _ready(core, name), timeout=30)
        started = time.monotonic()
        for name in ("orders-0", "orders-1"):
            core.delete_namespaced_pod(name, NAMESPACE)
        eventually(lambda: not core.list_namespaced_pod(NAMESPACE).items, timeout=40)
        assert time.monotonic() - started >= 6, "the pod lived on, terminating, while its process closed"
    exits = {r["pod"]: r["code"] for r in read_records(records) if r["kind"] == "exited"}
    assert exits["orders-0"] == 0, "closed in its own time: not SIGKILLed"
    assert exits["orders-1"] == -signal.SIGKILL, "its 1 s grace ended with a SIGKILL"
