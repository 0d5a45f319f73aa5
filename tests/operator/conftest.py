"""Fixtures of the operator suite: the emulated API server, the fake pods, and the real operator in-process.

Test modules here have names no other suite uses (`test_op_*`): the folder is not a package.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from pathlib import Path

import kubernetes
import pytest
from kopf.testing import KopfRunner
from op_testkit import Kubectl

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
def kube(k8s: kubernetes.client.ApiClient) -> Kubectl:
    return Kubectl(k8s)


@pytest.fixture()
def fake(cluster: RunningEmulator) -> Iterator[MemoryRuntime]:
    with memory_kubelet(cluster, catch_up_lag=1000) as running:
        yield running
    assert running.violations == [], running.violations


@pytest.fixture()
def journal_path(tmp_path: Path) -> Path:
    return tmp_path / "journal.jsonl"


@pytest.fixture()
def operator_config(cluster: RunningEmulator, journal_path: Path) -> OperatorConfig:
    return OperatorConfig(
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


OperatorFactory = Callable[..., contextlib.AbstractContextManager[OperatorContext]]


@pytest.fixture()
def run_operator(operator_config: OperatorConfig) -> OperatorFactory:
    """`with run_operator() as context:` runs the real operator (kopf, in-process) until the block ends."""

    @contextlib.contextmanager
    def start(config: OperatorConfig = operator_config) -> Iterator[OperatorContext]:
        context = OperatorContext(config)
        with KopfRunner(
            ["run", "-A", "--standalone"], registry=build_registry(context), timeout=30
        ) as runner:
            yield context
        assert runner.exception is None, runner.exception

    return start
