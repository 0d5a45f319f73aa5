"""The process runtime: each pod's container is a real process on a loopback IP of its own.

What process is one small, overridable place: a `CommandBuilder`, a function of the `Launch` (the pod, its
app's settings, its IP and volume) returning the argv and environment. `WorkerCommand` runs the sample
worker (`smoothscale worker`); another builder runs another app (the Java Kafka Streams sample app, say) with
everything else (addresses, restarts, readiness, graceful stops) unchanged.

Every process gets its own session (a terminal's Ctrl-C reaches the stand-in, which stops them in order;
signals go to the whole session, so a command may be a wrapper script) and its output goes to `launch.log`.
"""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
import time
import urllib.request
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Final

from smoothscale.contract import shared_names as contract

from . import environment as env
from .addresses import LoopbackAddresses
from .podruntime import Body, Launch
from .podspec import AppSettings, container_env


@dataclass(frozen=True)
class Command:
    """A process to start: its argv and its whole environment."""

    argv: Sequence[str]
    env: Mapping[str, str]


CommandBuilder = Callable[[Launch], Command]
"""What process runs a pod's container, and with which environment."""


def pod_env(launch: Launch) -> dict[str, str]:
    """Contract 3's variables every app's pod gets (its name, namespace and app, unless the pod sets them),
    then the pod's own container environment as a kubelet makes it (`podspec.container_env`), with what the
    stand-in placed (the state volume's folder, the metrics port) in place of the pod's own values."""
    metadata = launch.pod["metadata"]
    variables = {
        contract.POD_NAME_ENV: metadata["name"],
        contract.NAMESPACE_ENV: metadata["namespace"],
        contract.APP_ENV: (metadata.get("labels") or {}).get(contract.APP_LABEL, metadata["name"]),
    }
    placed = {
        contract.STATE_DIR_ENV: str(launch.state_dir),
        contract.METRICS_PORT_ENV: str(launch.settings.metrics_port),
    }
    return {**variables, **container_env(launch.pod, launch.ip, placed, launch.sources), **placed}


@dataclass(frozen=True)
class WorkerCommand:
    """`smoothscale worker`, the sample worker. `defaults` are environment defaults for every worker (rates,
    for instance); a pod's own environment overrides them, and what the stand-in decided (IP, port, state
    directory, kubeconfig, changelog epoch) overrides both."""

    kubeconfig: Path
    changelog_epoch: float
    record_file: Path | None = None
    defaults: Mapping[str, str] = field(default_factory=dict)

    def __call__(self, launch: Launch) -> Command:
        settings = launch.settings
        variables = {**os.environ, **self.defaults, **pod_env(launch)}
        variables.update(
            {
                env.KUBECONFIG_ENV: str(self.kubeconfig),
                env.METRICS_HOST_ENV: launch.ip,
                env.CHANGELOG_EPOCH_ENV: repr(self.changelog_epoch),
                env.STATELESS_SUBTOPOLOGIES_ENV: ",".join(sorted(settings.stateless_subtopologies)),
                env.PARENT_PID_ENV: str(os.getpid()),
            }
        )
        if self.record_file is not None:
            variables[env.RECORD_FILE_ENV] = str(self.record_file)
        # -P: the repository root must not shadow the standard library's `operator` (see harness.py).
        return Command([sys.executable, "-P", "-m", "smoothscale.cli", "worker"], variables)


class ProcessRuntime:
    """See the module docstring. Each pod gets the next free loopback address on its app's metrics port."""

    def __init__(self, command: CommandBuilder, *, first_address: str = "127.0.0.2") -> None:
        self.command = command
        self._addresses = LoopbackAddresses(first_address)

    def open(self) -> None:
        pass  # nothing runs between processes

    def close(self) -> None:
        pass

    def address(self, pod: Body, settings: AppSettings) -> str:
        return self._addresses.allocate(settings.metrics_port)

    def start(self, launch: Launch) -> ProcessContainer:
        command = self.command(launch)
        launch.state_dir.mkdir(parents=True, exist_ok=True)
        launch.log.parent.mkdir(parents=True, exist_ok=True)
        with launch.log.open("ab") as output:
            log_start = output.tell()  # a restart appends: only what this process writes counts
            process = subprocess.Popen(
                list(command.argv),
                env=dict(command.env),
                stdin=subprocess.DEVNULL,
                stdout=output,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        return ProcessContainer(process, launch, log_start)


STREAMS_RUNNING: Final = b"State transition from REBALANCING to RUNNING"
"""What Kafka Streams logs once it runs the tasks its group gave it."""


class ProcessContainer:
    """A process as a `Container`: ready once its metrics endpoint reports the generation it applied (the pod
    then follows its assignment), and trusted from then on. A Kafka Streams app on the streams protocol
    follows the brokers' assignment, not the operator's ConfigMap, and serves no metrics: ready once it logs
    that it runs (what a readiness probe on its state would check)."""

    def __init__(self, process: subprocess.Popen[bytes], launch: Launch, log_start: int = 0) -> None:
        self.process = process
        self.annotations: Mapping[str, str] = {}
        settings = launch.settings
        self._url = f"http://{launch.ip}:{settings.metrics_port}{settings.metrics_path}"
        self._ready = False
        self._log = launch.log if settings.streams_protocol else None
        self._log_start = log_start

    @property
    def id(self) -> int:
        return self.process.pid

    def poll(self) -> int | None:
        return self.process.poll()

    def wait(self, timeout: float | None) -> int | None:
        try:
            return self.process.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            return None

    def send_signal(self, signum: int) -> None:
        """To the whole process group (the command's own session): a wrapper script's children too."""
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.process.pid, signum)

    def ready(self) -> bool:
        if not self._ready and self._log is not None:
            with self._log.open("rb") as log:
                log.seek(self._log_start)
                self._ready = STREAMS_RUNNING in log.read()
        elif not self._ready:
            try:
                with urllib.request.urlopen(self._url, timeout=0.5) as response:
                    body = response.read()
                    self._ready = response.status == 200 and contract.GENERATION_METRIC.encode() in body
            except OSError:
                pass
        return self._ready


def worker_runtime(
    kubeconfig: Path,
    *,
    record_file: Path | None = None,
    worker_env: Mapping[str, str] | None = None,
    first_address: str = "127.0.0.2",
    changelog_epoch: float | None = None,
) -> ProcessRuntime:
    """The sandbox's usual runtime: a `smoothscale worker` per pod, its changelogs starting now unless
    `changelog_epoch` says when."""
    command = WorkerCommand(
        kubeconfig,
        changelog_epoch=time.time() if changelog_epoch is None else changelog_epoch,
        record_file=record_file,
        defaults=dict(worker_env or {}),
    )
    return ProcessRuntime(command, first_address=first_address)
