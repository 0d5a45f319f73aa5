"""What runs inside a pod of the kubelet stand-in: the pod runtime interface.

The stand-in (`kubelet.py`) plays the cluster's part around a pod (its node, its binding, its finalizer, its
status, restarts, graceful deletion, its volume) and leaves the pod's one container to a runtime: a real
process (`processruntime.py`: `smoothscale worker`, or any command a `CommandBuilder` returns, such as a JVM
of the Kafka Streams sample app) or pods faked in memory for the operator's fast tests
(`emulator/memoryruntime.py`). A container is driven the way a kubelet drives a process (signals, exit
codes), so that crashes, freezes and graceful stops mean the same thing for every runtime.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from .podspec import AppSettings, Sources

Body = Mapping[str, Any]


@dataclass(frozen=True)
class Launch:
    """Everything the stand-in decided for one start of a pod's container."""

    pod: Body
    """The pod as it was when its container first started (its spec cannot change afterwards)."""
    settings: AppSettings
    """The pod's StreamsApp as the container needs it (metrics port and path, stateless subtopologies)."""
    ip: str
    """The pod's IP (`status.podIP`): the same for every restart of the container, as in a real pod."""
    state_dir: Path
    """The state volume's directory: a claim's, which outlives the pod, or the pod's emptyDir."""
    log: Path
    """Where the container's output goes."""
    sources: Sources = field(default_factory=dict)
    """The ConfigMaps and Secrets its environment reads, as they were when the container first started."""


class Container(Protocol):
    """One running (or exited) container. Every call comes from the stand-in's threads and must not block
    longer than asked."""

    @property
    def id(self) -> int:
        """Distinct among the containers of one stand-in (a process's pid), as the record file needs."""

    @property
    def annotations(self) -> Mapping[str, str]:
        """Pod annotations the container needs set (how to reach it, when the pod's IP is not enough)."""

    def poll(self) -> int | None:
        """The exit code once the container has exited, None while it runs."""

    def wait(self, timeout: float | None) -> int | None:
        """Wait up to `timeout` seconds (None: as long as it takes) for the exit; its code, or None."""

    def send_signal(self, signum: int) -> None:
        """SIGTERM (stop gracefully), SIGKILL, SIGSTOP (freeze) or SIGCONT (thaw); nothing once exited."""

    def ready(self) -> bool:
        """Whether the pod's readiness probe passes now (asked while the container runs)."""


class PodRuntime(Protocol):
    """Starts containers. `open()` before the first start, `close()` after every container has exited."""

    def open(self) -> None: ...

    def close(self) -> None: ...

    def address(self, pod: Body, settings: AppSettings) -> str:
        """The IP of a pod about to start for the first time."""

    def start(self, launch: Launch) -> Container:
        """Start the pod's container (again, after a crash, with the same `launch.ip` and volume)."""
