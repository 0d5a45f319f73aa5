"""Running the emulator: kubeconfig, the threaded runner, and the standalone process and its signals."""

from __future__ import annotations

import asyncio
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import aiohttp
import kubernetes
import pytest
import yaml

from smoothscale.sandbox.emulator import EmulatorThread, RunningEmulator, build_emulator, serve_emulator


async def test_serve_writes_a_kubeconfig_for_the_url(tmp_path: Path) -> None:
    path = tmp_path / "config" / "kubeconfig"
    async with serve_emulator(kubeconfig=path) as running:
        assert running.url == f"http://127.0.0.1:{running.port}"
        config = yaml.safe_load(path.read_text())
        assert config["clusters"][0]["cluster"]["server"] == running.url
        context = config["contexts"][0]
        assert config["current-context"] == context["name"]
        assert context["context"]["user"] == config["users"][0]["name"]
        client_config = kubernetes.client.Configuration()
        kubernetes.config.load_kube_config(config_file=str(path), client_configuration=client_config)
        assert client_config.host == running.url
        async with aiohttp.ClientSession() as api:
            assert (await api.get(f"{running.url}/api/v1/namespaces")).status == 200
    assert path.exists()  # an explicitly requested kubeconfig stays


async def test_a_temporary_kubeconfig_is_removed_on_exit() -> None:
    async with serve_emulator() as running:
        path = running.kubeconfig
        assert path.exists()
    assert not path.exists()


def test_the_threaded_emulator_serves_synchronous_clients(
    threaded: RunningEmulator, k8s: kubernetes.client.ApiClient
) -> None:
    version = kubernetes.client.VersionApi(k8s).get_code()
    assert version.major == "1"
    core = kubernetes.client.CoreV1Api(k8s)
    core.create_namespaced_config_map("default", {"metadata": {"name": "cm"}, "data": {"a": "1"}})
    assert core.read_namespaced_config_map("cm", "default").data == {"a": "1"}


def test_the_threaded_emulator_runs_functions_in_its_loop() -> None:
    runner = EmulatorThread(build_emulator())
    with runner as running:
        created = runner.call(
            lambda: running.emulator.create_object("v1/configmaps", {"metadata": {"name": "seeded"}})
        )
        assert created["metadata"]["namespace"] == "default"  # namespaced kinds default to `default`
        client = kubernetes.config.new_client_from_config(config_file=str(running.kubeconfig))
        with client:
            assert (
                kubernetes.client.CoreV1Api(client)
                .read_namespaced_config_map("seeded", "default")
                .metadata.uid
            )


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT])
async def test_the_standalone_emulator_exits_promptly_on_a_signal(
    tmp_path: Path, signum: signal.Signals
) -> None:
    port, kubeconfig = _free_port(), tmp_path / "kubeconfig"
    command = [
        sys.executable,
        "-m",
        "smoothscale.sandbox.emulator",
        "--port",
        str(port),
        "--kubeconfig",
        str(kubeconfig),
    ]
    process = subprocess.Popen(command, cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    try:
        deadline = time.monotonic() + 15
        while not kubeconfig.exists():
            assert process.poll() is None, process.communicate()[0]
            assert time.monotonic() < deadline, "the emulator did not start"
            await asyncio.sleep(0.05)
        url = yaml.safe_load(kubeconfig.read_text())["clusters"][0]["cluster"]["server"]
        assert url == f"http://127.0.0.1:{port}"
        async with aiohttp.ClientSession() as api:
            watch = await api.get(f"{url}/api/v1/pods", params={"watch": "true"})  # a stream that never ends
            assert watch.status == 200
            started = time.monotonic()
            process.send_signal(signum)
            await asyncio.to_thread(process.wait, 5)
            assert time.monotonic() - started < 3.5
            watch.close()
        assert process.returncode == 0
        assert f"serving {url}" in process.communicate()[0].decode()
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
