"""The chaos runs' API faults (issue 25): the emulator stopped and started again on the same port with what it
stored, and one pod's own path to the API server cut (dropped or refused) and healed."""

from __future__ import annotations

import socket
import time
from pathlib import Path

import kubernetes
import pytest
import urllib3

from smoothscale.sandbox.api_links import ApiLinks, Cut
from smoothscale.sandbox.emulator import EmulatorThread, build_emulator

CONFIGMAP = {"metadata": {"name": "kept"}, "data": {"a": "1"}}


def client(kubeconfig: Path) -> kubernetes.client.CoreV1Api:
    return kubernetes.client.CoreV1Api(kubernetes.config.new_client_from_config(config_file=str(kubeconfig)))


def read(core: kubernetes.client.CoreV1Api, timeout: float = 2) -> str:
    item = core.read_namespaced_config_map("kept", "default", _request_timeout=timeout)
    return str(item.data["a"])


def test_a_stopped_emulator_refuses_then_serves_what_it_stored_on_the_same_port() -> None:
    thread = EmulatorThread(build_emulator())
    with thread as running:
        core = client(running.kubeconfig)
        core.create_namespaced_config_map("default", CONFIGMAP)
        thread.stop_serving()
        with pytest.raises(urllib3.exceptions.MaxRetryError, match="Connection refused"):
            read(core)
        thread.start_serving()
        assert read(core) == "1"


def test_a_cut_link_drops_or_refuses_only_that_pods_requests_until_healed(tmp_path: Path) -> None:
    with EmulatorThread(build_emulator()) as running, ApiLinks(running.kubeconfig, tmp_path) as links:
        client(running.kubeconfig).create_namespaced_config_map("default", CONFIGMAP)
        cut = client(links.kubeconfig_for("app-0", "127.0.0.1"))
        other = client(links.kubeconfig_for("app-1", "127.0.0.1"))
        assert read(cut) == read(other) == "1"

        links.cut("app-0", Cut.DROP)
        began = time.monotonic()
        with pytest.raises(urllib3.exceptions.HTTPError, match="Read timed out"):
            read(cut, timeout=1)
        assert time.monotonic() - began >= 0.9, "a dropped path answers nothing: the client times out"
        assert read(other) == "1", "the other pod's path still works"
        links.heal("app-0")
        assert read(cut) == "1"

        links.cut("app-0", Cut.REFUSE)
        with pytest.raises(urllib3.exceptions.MaxRetryError, match="Connection refused"):
            read(cut)
        links.heal("app-0")
        assert read(cut) == "1"


def test_a_dropped_link_stalls_an_open_connection_and_heal_closes_it(tmp_path: Path) -> None:
    """A watch open when the path is cut hears nothing more; once healed, its connection ends, so that the
    client notices and connects again instead of waiting on a dead stream."""
    with EmulatorThread(build_emulator()) as running, ApiLinks(running.kubeconfig, tmp_path) as links:
        kubeconfig = links.kubeconfig_for("app-0", "127.0.0.1")
        server = client(kubeconfig).api_client.configuration.host.removeprefix("http://")
        host, port = server.rsplit(":", 1)
        with socket.create_connection((host, int(port)), timeout=2) as stream:
            request = b"GET /api/v1/namespaces/default/configmaps HTTP/1.1\r\nHost: x\r\n\r\n"
            stream.sendall(request)
            assert stream.recv(12) == b"HTTP/1.1 200"
            stream.recv(65536)
            links.cut("app-0", Cut.DROP)
            stream.sendall(request)
            with pytest.raises(TimeoutError):
                stream.recv(1)
            links.heal("app-0")
            assert stream.recv(1) == b"", "healing ends the stalled connection"
