"""Fixtures: an emulated API server in a thread of its own, and clients of it."""

from __future__ import annotations

from collections.abc import Iterator

import kubernetes
import pytest

from smoothscale.sandbox.emulator import EmulatorThread, RunningEmulator, build_emulator


@pytest.fixture()
def cluster() -> Iterator[RunningEmulator]:
    """An emulator in its own thread: the code under test uses the synchronous `kubernetes` client."""
    with EmulatorThread(build_emulator(bookmark_interval=0.3)) as served:
        yield served


@pytest.fixture()
def core(cluster: RunningEmulator) -> Iterator[kubernetes.client.CoreV1Api]:
    """The official client, configured from the emulator's kubeconfig (never from $KUBECONFIG)."""
    with kubernetes.config.new_client_from_config(config_file=str(cluster.kubeconfig)) as client:
        yield kubernetes.client.CoreV1Api(client)
