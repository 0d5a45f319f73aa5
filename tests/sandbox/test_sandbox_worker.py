"""The sample worker: restores, processes, records, stops a revoked task before acknowledging, keeps state."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import kubernetes
import pytest
from sandbox_testkit import NAMESPACE, configmap_body, eventually, publication, publish

from smoothscale.client import ClientConfig
from smoothscale.contract import shared_names as contract
from smoothscale.sandbox.changelog import Changelog
from smoothscale.sandbox.emulator import RunningEmulator
from smoothscale.sandbox.records import overlaps, processing_intervals, read_records
from smoothscale.sandbox.state import StateStore
from smoothscale.sandbox.worker import SampleWorker, WorkerConfig

APP = "orders"
POD = "orders-0"


@pytest.fixture()
def changelog() -> Changelog:
    return Changelog(epoch=time.time(), initial_offset=3_000, input_rate=100.0)


@dataclass
class Running:
    worker: SampleWorker
    stopping: threading.Event
    thread: threading.Thread

    def stop(self) -> None:
        self.stopping.set()
        self.thread.join(timeout=5)


@pytest.fixture()
def start_worker(
    cluster: RunningEmulator, tmp_path: Path, changelog: Changelog
) -> Iterator[Callable[..., Running]]:
    """Start an in-process worker (fast rates) on a thread; every one started is stopped at the end."""
    started: list[Running] = []

    def start(pod: str = POD, state: str = "state") -> Running:
        config = WorkerConfig(
            client=ClientConfig(
                pod=pod,
                namespace=NAMESPACE,
                app=APP,
                kubeconfig=cluster.kubeconfig,
                metrics_host="127.0.0.1",
                metrics_port=0,
                watch_seconds=2,
            ),
            state_dir=tmp_path / state,
            changelog=changelog,
            restore_rate=30_000.0,
            process_rate=1_000.0,
            stateless_subtopologies=frozenset({"1"}),
            record_file=tmp_path / "records.jsonl",
            tick_seconds=0.05,
            claim_seconds=0.3,
        )
        worker = SampleWorker(config)
        stopping = threading.Event()
        thread = threading.Thread(target=worker.run, args=(stopping,), daemon=True)
        thread.start()
        started.append(Running(worker, stopping, thread))
        return started[-1]

    yield start
    for running in started:
        running.stop()


def _records(tmp_path: Path, kind: str, **match: Any) -> list[dict[str, Any]]:
    return [
        record
        for record in read_records(tmp_path / "records.jsonl")
        if record["kind"] == kind and all(record.get(k) == v for k, v in match.items())
    ]


def _lags(worker: SampleWorker) -> dict[str, float]:
    text = worker.client.metrics.render().decode()
    prefix = contract.TASK_LAG_METRIC + '{task="'
    return {
        line[len(prefix) :].split('"')[0]: float(line.split()[-1])
        for line in text.splitlines()
        if line.startswith(prefix)
    }


def test_restores_then_processes_and_a_revoked_task_stops_before_the_ack(
    core: kubernetes.client.CoreV1Api, start_worker: Callable[..., Running], tmp_path: Path
) -> None:
    worker = start_worker().worker
    publish(
        core,
        APP,
        configmap_body(APP, publication(1, **{POD: {"active": ["0_0", "1_0"], "standby": ["0_1"]}})),
    )
    eventually(lambda: _records(tmp_path, "lease", task="0_0") and _records(tmp_path, "lease", task="1_0"))
    restored = {record["task"]: record for record in _records(tmp_path, "restored")}
    assert restored["0_0"]["role"] == "active" and restored["0_0"]["fromOffset"] == 0
    assert restored["0_0"]["toOffset"] >= 3_000
    eventually(lambda: _records(tmp_path, "restored", task="0_1"))
    assert set(_lags(worker)) == {"0_0", "0_1"}  # stateless 1_0 has no changelog, hence no lag
    assert max(_lags(worker).values()) < 200

    publish(core, APP, configmap_body(APP, publication(2, **{POD: {"active": ["1_0"], "standby": ["0_0"]}})))
    eventually(lambda: worker.client.applier.generation == 2)
    acknowledged = time.time()
    [release] = _records(tmp_path, "release", task="0_0")
    assert release["end"] <= acknowledged
    intervals = [i for i in processing_intervals(read_records(tmp_path / "records.jsonl")) if i.task == "0_0"]
    assert max(interval.end for interval in intervals) <= acknowledged
    time.sleep(0.3)
    assert _records(tmp_path, "lease", task="0_0")[-1]["start"] < release["end"]  # no lease after the release
    assert set(_lags(worker)) == {"0_0", "0_1"}  # state kept and still reported, assigned or not


def test_state_on_the_volume_is_restored_not_rebuilt_after_a_restart(
    core: kubernetes.client.CoreV1Api, start_worker: Callable[..., Running], tmp_path: Path
) -> None:
    publish(core, APP, configmap_body(APP, publication(1, **{POD: {"active": ["0_0"]}})))
    first = start_worker()
    eventually(lambda: _records(tmp_path, "lease", task="0_0"))
    first.stop()
    saved = StateStore(tmp_path / "state").load_all()["0_0"]
    assert saved.offset >= 3_000 and saved.consistent

    start_worker()  # a new process of the same pod, on the same volume
    eventually(lambda: len(_records(tmp_path, "restored", task="0_0")) == 2)
    started = _records(tmp_path, "started")
    assert started[-1]["tasks"] == {"0_0": saved.offset}
    again = _records(tmp_path, "restored", task="0_0")[-1]
    assert again["fromOffset"] == saved.offset and again["toOffset"] - again["fromOffset"] < 1_000

    start_worker(pod="orders-1", state="other")  # another pod holds nothing: it records no lease
    time.sleep(0.3)
    assert overlaps(processing_intervals(read_records(tmp_path / "records.jsonl"))) == []


def test_the_command_runs_from_the_environment_and_stops_cleanly_on_sigterm(
    cluster: RunningEmulator, core: kubernetes.client.CoreV1Api, tmp_path: Path
) -> None:
    publish(core, APP, configmap_body(APP, publication(1, **{POD: {"active": ["0_0"]}})))
    env = {
        **os.environ,
        contract.POD_NAME_ENV: POD,
        contract.NAMESPACE_ENV: NAMESPACE,
        contract.APP_ENV: APP,
        "SMOOTHSCALE_KUBECONFIG": str(cluster.kubeconfig),
        "SMOOTHSCALE_STATE_DIR": str(tmp_path / "state"),
        "SMOOTHSCALE_METRICS_HOST": "127.0.0.1",
        "SMOOTHSCALE_METRICS_PORT": "0",
        "SMOOTHSCALE_INITIAL_OFFSET": "1000",
        "SMOOTHSCALE_RECORD_FILE": str(tmp_path / "records.jsonl"),
        "SMOOTHSCALE_PARENT_PID": str(os.getpid()),
    }
    process = subprocess.Popen(
        [sys.executable, "-m", "smoothscale.cli", "worker"], env=env, stderr=subprocess.PIPE, text=True
    )
    try:
        eventually(lambda: _records(tmp_path, "lease", task="0_0"), timeout=20)
        # a partition from the operator (`Kubelet.cut_from_operator`): its endpoint closes, it processes on
        process.send_signal(signal.SIGUSR1)
        cut = eventually(lambda: _records(tmp_path, "unreachable"))[0]["at"]
        eventually(lambda: [r for r in _records(tmp_path, "lease", task="0_0") if r["start"] > cut])
        process.send_signal(signal.SIGUSR2)
        eventually(lambda: _records(tmp_path, "reachable"))
        process.send_signal(signal.SIGTERM)
        assert process.wait(timeout=10) == 0
    finally:
        process.kill()
    assert _records(tmp_path, "release", task="0_0")
    assert "SIGTERM, stopping" in (process.stderr.read() if process.stderr else "")


_PARENT = """
import os, subprocess, sys, time
env = {**os.environ, "SMOOTHSCALE_PARENT_PID": str(os.getpid())}
child = subprocess.Popen([sys.executable, "-m", "smoothscale.cli", "worker", *sys.argv[1:]], env=env)
print(child.pid, flush=True)
time.sleep(60)
"""


def test_a_worker_whose_parent_dies_exits(tmp_path: Path) -> None:
    """The kubelet stand-in passes its pid: if it is killed outright, its workers must not live on."""
    options = ["--pod", POD, "--app", APP, "--state-dir", str(tmp_path / "state")]
    options += [
        "--assignment-dir",
        str(tmp_path / "mounted"),
        "--metrics-host",
        "127.0.0.1",
        "--metrics-port",
        "0",
    ]
    parent = subprocess.Popen([sys.executable, "-c", _PARENT, *options], stdout=subprocess.PIPE, text=True)
    assert parent.stdout is not None
    child = int(parent.stdout.readline())
    eventually((tmp_path / "state").is_dir, timeout=20)  # the worker is up
    parent.kill()
    parent.wait()
    eventually(lambda: not _alive(child), timeout=5)


def _alive(pid: int) -> bool:
    """Running, as opposed to gone or a zombie waiting for a reaper that this container may not have."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().split(") ")[1][0] != "Z"
    except (FileNotFoundError, IndexError):
        return False
