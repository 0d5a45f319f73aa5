"""Fixtures of the operations CLI's tests: the emulated API server, fake pods, and the real operator.

Test modules here have names no other suite uses (`test_ops_*`): the folder is not a package.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import kubernetes
import pytest
from kopf.testing import KopfRunner

from smoothscale.operator.config import OperatorConfig
from smoothscale.operator.context import OperatorContext
from smoothscale.operator.main import build_registry
from smoothscale.sandbox.emulator import EmulatorThread, RunningEmulator, build_emulator
from smoothscale.sandbox.emulator.memoryruntime import MemoryRuntime, memory_kubelet


@pytest.fixture()
def cluster() -> Iterator[RunningEmulator]:
    with EmulatorThread(build_emulator(bookmark_interval=0.5)) as served:
        yield served


@pytest.fixture()
def k8s(cluster: RunningEmulator) -> Iterator[kubernetes.client.ApiClient]:
    with kubernetes.config.new_client_from_config(config_file=str(cluster.kubeconfig)) as client:
        yield client


@pytest.fixture()
def fake(cluster: RunningEmulator) -> Iterator[MemoryRuntime]:
    """The app's pods (no processes), checked for a task processed by two pods at once."""
    with memory_kubelet(cluster, catch_up_lag=1000) as running:
        yield running
    assert running.violations == [], running.violations


@pytest.fixture()
def journal_path(tmp_path: Path) -> Path:
    return tmp_path / "journal.jsonl"


@pytest.fixture()
def operator(cluster: RunningEmulator, journal_path: Path) -> Iterator[OperatorContext]:
    """The real operator (kopf, in-process) for the whole test."""
    config = OperatorConfig(
        kubeconfig=cluster.kubeconfig,
        metrics_host="127.0.0.1",
        metrics_port=0,
        journal_stdout=False,
        journal_file=journal_path,
        standalone=True,
        scrape_interval=0.2,
        scrape_timeout=0.5,
        debounce=0.05,
    )
    context = OperatorContext(config)
    with KopfRunner(["run", "-A", "--standalone"], registry=build_registry(context), timeout=30) as runner:
        yield context
    assert runner.exception is None, runner.exception
