"""The client library against the emulated API: ordered application, revoke-before-ack, refusals, leaving."""

from __future__ import annotations

import logging
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import kubernetes
import pytest
from sandbox_testkit import NAMESPACE, configmap_body, eventually, publication, publish

from smoothscale.client import ClientConfig, Role, StreamsClient, TaskListener, role_changes
from smoothscale.client.metrics import TaskMetrics
from smoothscale.client.roles import RoleChange
from smoothscale.contract import shared_names as contract
from smoothscale.contract.configmap import encode_publication
from smoothscale.sandbox.emulator import RunningEmulator

APP = "orders"
POD = "orders-0"


class Recorder(TaskListener):
    """Records every callback with the generation the pod reported while the callback ran."""

    def __init__(self) -> None:
        self.client: StreamsClient | None = None
        self.calls: list[tuple[str, str, int]] = []
        self.leaving: list[str] = []
        self.revoke_seconds = 0.0

    def _note(self, what: str, task: str) -> None:
        assert self.client is not None
        self.calls.append((what, task, self.client.applier.generation))

    def on_revoked(self, task: str) -> None:
        time.sleep(self.revoke_seconds)  # a slow stop: the acknowledgement must wait for it
        self._note("revoked", task)

    def on_assigned(self, task: str) -> None:
        self._note("assigned", task)

    def on_standby_started(self, task: str) -> None:
        self._note("standby+", task)

    def on_standby_stopped(self, task: str) -> None:
        self._note("standby-", task)

    def on_warmup_started(self, task: str) -> None:
        self._note("warmup+", task)

    def on_warmup_stopped(self, task: str) -> None:
        self._note("warmup-", task)

    def on_leaving(self, value: str) -> None:
        self.leaving.append(value)


def _scraped_generation(port: int) -> float:
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5) as response:
        text: str = response.read().decode()
    line = next(line for line in text.splitlines() if line.startswith(contract.GENERATION_METRIC + " "))
    return float(line.split()[1])


@pytest.fixture()
def recorder() -> Recorder:
    return Recorder()


@contextmanager
def running(cluster: RunningEmulator, recorder: Recorder, **options: Any) -> Iterator[StreamsClient]:
    """POD's client on the emulated API, its callbacks recorded by `recorder`; `options` go to its config."""
    config = ClientConfig(
        pod=POD, namespace=NAMESPACE, app=APP, kubeconfig=cluster.kubeconfig, watch_seconds=2, **options
    )
    with StreamsClient(config, recorder) as started:
        recorder.client = started
        yield started


@pytest.fixture()
def client(cluster: RunningEmulator, recorder: Recorder) -> Iterator[StreamsClient]:
    with running(cluster, recorder, metrics_host="127.0.0.1", metrics_port=0) as started:
        yield started


def test_role_changes_stop_actives_first_and_start_actives_last() -> None:
    before = {"0_0": Role.ACTIVE, "0_1": Role.STANDBY, "0_2": Role.WARMUP, "0_10": Role.ACTIVE}
    after = {"0_1": Role.ACTIVE, "0_2": Role.STANDBY, "0_10": Role.STANDBY, "0_3": Role.WARMUP}
    assert role_changes(before, after) == [
        RoleChange("0_0", Role.ACTIVE, started=False),
        RoleChange("0_10", Role.ACTIVE, started=False),
        RoleChange("0_1", Role.STANDBY, started=False),
        RoleChange("0_2", Role.WARMUP, started=False),
        RoleChange("0_2", Role.STANDBY, started=True),
        RoleChange("0_3", Role.WARMUP, started=True),
        RoleChange("0_10", Role.STANDBY, started=True),
        RoleChange("0_1", Role.ACTIVE, started=True),
    ]
    assert role_changes(after, after) == []


def test_the_generation_is_reported_once_the_assignment_was_read(
    cluster: RunningEmulator, recorder: Recorder
) -> None:
    """The operator moves a running task only to a pod that reports a generation: a pod must not report one
    before it follows its assignment, or a task handed to it would wait for its client to start."""
    config = ClientConfig(
        pod=POD, namespace=NAMESPACE, app=APP, kubeconfig=cluster.kubeconfig, metrics_port=None
    )
    client = StreamsClient(config, recorder)
    assert contract.GENERATION_METRIC not in client.metrics.render().decode()
    with client:  # nothing is published yet: read, nothing applied
        eventually(lambda: f"{contract.GENERATION_METRIC} 0.0" in client.metrics.render().decode())


def test_a_revoked_task_stops_before_the_generation_is_acknowledged(
    core: kubernetes.client.CoreV1Api, client: StreamsClient, recorder: Recorder
) -> None:
    publish(core, APP, configmap_body(APP, publication(1, **{POD: {"active": ["0_0", "0_1"]}})))
    eventually(lambda: client.applier.generation == 1)
    assert client.metrics_port is not None
    assert _scraped_generation(client.metrics_port) == 1

    recorder.revoke_seconds = 0.5
    moved = publication(2, **{POD: {"active": ["0_0"], "standby": ["0_1"]}, "orders-1": {"active": []}})
    publish(core, APP, configmap_body(APP, moved))
    eventually(lambda: _scraped_generation(client.metrics_port or 0) == 2)
    assert recorder.calls == [
        ("assigned", "0_0", 0),
        ("assigned", "0_1", 0),
        ("revoked", "0_1", 1),  # still reporting generation 1 while it stops
        ("standby+", "0_1", 1),
    ]
    assert client.applier.roles() == {"0_0": Role.ACTIVE, "0_1": Role.STANDBY}


def test_corrupt_and_older_generations_are_ignored_and_work_continues(
    core: kubernetes.client.CoreV1Api,
    client: StreamsClient,
    recorder: Recorder,
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.INFO, logger="smoothscale.client")
    publish(core, APP, configmap_body(APP, publication(5, **{POD: {"active": ["0_0"]}})))
    eventually(lambda: client.applier.generation == 5)

    garbage = configmap_body(APP, publication(6, **{POD: {"active": []}}))
    garbage["binaryData"][contract.ASSIGNMENT_KEY] = "bm90IGd6aXA="  # base64 of "not gzip"
    publish(core, APP, garbage)
    mismatched = configmap_body(APP, publication(7, **{POD: {"active": []}}))
    mismatched["data"][contract.GENERATION_KEY] = "8"
    publish(core, APP, mismatched)
    publish(core, APP, configmap_body(APP, publication(4, **{POD: {"active": ["0_9"]}})))
    eventually(lambda: "older than the applied generation 5" in caplog.text)

    assert caplog.text.count("ignores a corrupt assignment") == 2
    assert "not gzip data" in caplog.text and "'8' but the assignment is generation 7" in caplog.text
    assert client.applier.generation == 5
    assert client.applier.roles() == {"0_0": Role.ACTIVE}
    assert [call[0] for call in recorder.calls] == ["assigned"]

    publish(core, APP, configmap_body(APP, publication(9, **{POD: {"warmup": ["0_0"]}})))
    eventually(lambda: client.applier.generation == 9)
    assert client.applier.roles() == {"0_0": Role.WARMUP}


def test_a_failing_callback_leaves_the_generation_unacknowledged_until_a_retry_succeeds(
    core: kubernetes.client.CoreV1Api, cluster: RunningEmulator, caplog: pytest.LogCaptureFixture
) -> None:
    class Flaky(TaskListener):
        failures = 1

        def on_assigned(self, task: str) -> None:
            if self.failures:
                self.failures -= 1
                raise RuntimeError("state store locked")

    publish(core, APP, configmap_body(APP, publication(1, **{POD: {"active": ["0_0"]}})))
    config = ClientConfig(
        pod=POD,
        namespace=NAMESPACE,
        app=APP,
        kubeconfig=cluster.kubeconfig,
        metrics_port=None,
        watch_seconds=1,
    )
    with StreamsClient(config, Flaky()) as client:
        eventually(lambda: "state store locked" in caplog.text)
        assert client.applier.generation == 0
        eventually(lambda: client.applier.generation == 1, timeout=5)  # the next resync retries


def test_leaving_is_reported_once_per_appearance(
    core: kubernetes.client.CoreV1Api, client: StreamsClient, recorder: Recorder
) -> None:
    core.create_namespaced_pod(
        NAMESPACE, {"metadata": {"name": POD}, "spec": {"containers": [{"name": "app", "image": "worker"}]}}
    )
    core.patch_namespaced_pod(POD, NAMESPACE, {"metadata": {"labels": {"unrelated": "change"}}})
    core.patch_namespaced_pod(
        POD, NAMESPACE, {"metadata": {"annotations": {contract.LEAVING_ANNOTATION: "2026-11-21T10:00:00Z"}}}
    )
    eventually(lambda: recorder.leaving)
    core.patch_namespaced_pod(POD, NAMESPACE, {"metadata": {"labels": {"another": "change"}}})
    time.sleep(0.3)
    assert recorder.leaving == ["2026-11-21T10:00:00Z"]


def test_without_api_access_the_mounted_configmap_is_followed(
    tmp_path: Path, recorder: Recorder, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("KUBERNETES_SERVICE_HOST", raising=False)
    config = ClientConfig(
        pod=POD, namespace=NAMESPACE, app=APP, assignment_dir=tmp_path, metrics_port=None, poll_seconds=0.05
    )
    with StreamsClient(config, recorder) as client:
        recorder.client = client
        for generation, tasks in ((1, ["0_0"]), (2, ["0_1"])):
            staged = tmp_path / "staged"
            staged.write_bytes(encode_publication(publication(generation, **{POD: {"active": tasks}})))
            staged.replace(tmp_path / contract.ASSIGNMENT_KEY)
            eventually(lambda generation=generation: client.applier.generation == generation)
        assert client.applier.roles() == {"0_1": Role.ACTIVE}


def test_close_stops_every_callback(core: kubernetes.client.CoreV1Api, cluster: RunningEmulator) -> None:
    calls: list[str] = []

    class Counting(TaskListener):
        def on_assigned(self, task: str) -> None:
            calls.append(task)

    config = ClientConfig(
        pod=POD,
        namespace=NAMESPACE,
        app=APP,
        kubeconfig=cluster.kubeconfig,
        metrics_port=None,
        watch_seconds=1,
    )
    with StreamsClient(config, Counting()):
        pass
    publish(core, APP, configmap_body(APP, publication(1, **{POD: {"active": ["0_0"]}})))
    time.sleep(0.5)
    assert calls == []


def test_the_busy_ratio_and_input_lag_are_exposed_for_the_autoscaler() -> None:
    """A pod's true capacity is what it processed over its busy ratio: absent until the app reports it."""
    metrics = TaskMetrics()
    assert contract.BUSY_RATIO_METRIC not in metrics.render().decode()
    metrics.set_busy_ratio(0.25)
    metrics.set_input_lag("0_0", 1_200)
    text = metrics.render().decode()
    assert f"{contract.BUSY_RATIO_METRIC} 0.25" in text
    assert f'{contract.INPUT_LAG_METRIC}{{task="0_0"}} 1200.0' in text
    metrics.forget_task("0_0")
    assert contract.INPUT_LAG_METRIC + "{" not in metrics.render().decode()
    with pytest.raises(ValueError, match=r"within 0\.\.1"):
        metrics.set_busy_ratio(1.5)
