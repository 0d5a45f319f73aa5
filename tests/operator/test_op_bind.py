"""The operator's metrics and health endpoints listen only on the address they are given (e.g. the pod IP or
loopback behind a sidecar), not on every interface: the test binds them to one loopback address and finds
them there and not on another one."""

from __future__ import annotations

import os
import random
import socket
import urllib.error
import urllib.request
from pathlib import Path

import pytest
from op_testkit import SMOOTHSCALE, operator_process, wait_for

from smoothscale.sandbox.emulator import RunningEmulator


def _free_port(host: str) -> int:
    with socket.socket() as probe:
        probe.bind((host, 0))
        port: int = probe.getsockname()[1]
        return port


def _answers(url: str) -> bool:
    try:
        with urllib.request.urlopen(url, timeout=1) as response:
            return bool(response.status == 200)
    except (urllib.error.URLError, OSError):
        return False


def test_metrics_and_liveness_bind_to_the_configured_address_only(
    cluster: RunningEmulator, tmp_path: Path
) -> None:
    block = f"127.{random.randint(1, 250)}.{random.randint(1, 250)}"
    host, other = f"{block}.2", f"{block}.3"  # random: other tests' listeners are unlikely to be there
    metrics, health = _free_port(host), _free_port(host)
    command = [
        SMOOTHSCALE,
        "operator",
        f"--kubeconfig={cluster.kubeconfig}",
        "--standalone",
        f"--metrics-host={host}",
        f"--metrics-port={metrics}",
        f"--liveness=http://{host}:{health}/healthz",
        "--no-journal-stdout",
    ]
    with operator_process(command, tmp_path / "operator.log"):
        wait_for(lambda: _answers(f"http://{host}:{metrics}/metrics"), timeout=30, what="metrics")
        wait_for(lambda: _answers(f"http://{host}:{health}/healthz"), timeout=30, what="liveness")
        for port in (metrics, health):
            with socket.socket() as attempt, pytest.raises(ConnectionRefusedError):
                attempt.connect((other, port))


def test_the_health_endpoint_fails_while_the_operator_has_no_credentials(tmp_path: Path) -> None:
    """Found on a real node: a chart-installed operator whose token volume held an empty CA could not log
    in, yet answered its probes and was Ready, serving nothing. Here it finds no credentials at all (no
    in-cluster account, no kubeconfig)."""
    host = "127.0.0.1"
    health = _free_port(host)
    variables = {
        name: value
        for name, value in os.environ.items()
        if name not in {"KUBECONFIG", "KUBERNETES_SERVICE_HOST", "KUBERNETES_SERVICE_PORT"}
    }
    command = [
        SMOOTHSCALE,
        "operator",
        "--standalone",
        f"--metrics-port={_free_port(host)}",
        f"--liveness=http://{host}:{health}/healthz",
        "--no-journal-stdout",
    ]
    with operator_process(command, tmp_path / "operator.log", env={**variables, "HOME": str(tmp_path)}):
        status = wait_for(lambda: _status(f"http://{host}:{health}/healthz"), timeout=30, what="an answer")
    assert status == 500


def _status(url: str) -> int | None:
    try:
        with urllib.request.urlopen(url, timeout=1) as response:
            return int(response.status)
    except urllib.error.HTTPError as error:
        return int(error.code)
    except (urllib.error.URLError, OSError):
        return None
