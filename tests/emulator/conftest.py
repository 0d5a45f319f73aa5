"""Fixtures: an emulator served in the test's own loop (for aiohttp), or from a thread (for sync clients)."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator

import aiohttp
import kubernetes
import pytest

from smoothscale.sandbox.emulator import (
    EmulatorThread,
    ExtendedEmulator,
    RunningEmulator,
    build_emulator,
    serve_emulator,
)


@pytest.fixture()
def emulator() -> ExtendedEmulator:
    return build_emulator(bookmark_interval=0.3)


@pytest.fixture()
async def running(emulator: ExtendedEmulator) -> AsyncIterator[RunningEmulator]:
    async with serve_emulator(emulator) as served:
        yield served


@pytest.fixture()
async def api(running: RunningEmulator) -> AsyncIterator[aiohttp.ClientSession]:
    """Raw HTTP against the emulator: `await api.get('/api/v1/...')`."""
    async with aiohttp.ClientSession(base_url=running.url) as session:
        yield session


@pytest.fixture()
def threaded() -> Iterator[RunningEmulator]:
    """An emulator in its own thread: synchronous clients must not block the loop that serves them."""
    with EmulatorThread(build_emulator(bookmark_interval=0.3)) as served:
        yield served


@pytest.fixture()
def k8s(threaded: RunningEmulator) -> Iterator[kubernetes.client.ApiClient]:
    """The official client, configured from the emulator's kubeconfig (not from $KUBECONFIG)."""
    client = kubernetes.config.new_client_from_config(config_file=str(threaded.kubeconfig))
    with client:
        yield client
