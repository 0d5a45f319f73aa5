"""Start and stop real Apache Kafka brokers on loopback (KRaft combined mode), for tests and the demo.

`KafkaCluster(work_dir, log_dir, brokers=1)` formats each node's storage with Kafka's own `StorageTool`,
starts one JVM per node (`kafka.Kafka server.properties`, small heap) and returns once every broker is
registered and serves metadata. With three brokers, `racks` (default: three zones) become `broker.rack`.

Every JVM runs in a process group of its own, which `stop()` ends (SIGTERM, then SIGKILL after a grace
period); `stop()` also runs at interpreter exit, and on Linux the kernel kills a JVM whose launching thread
died (`PR_SET_PDEATHSIG`), so a test run killed outright leaves no broker behind. A node can be stopped and
started again with its data (`stop_node`, `start_node`): how tests take Kafka away and bring it back.

Each node's own logs (`server.log`, `controller.log`, `state-change.log`, in Kafka's layout) go to
`<log_dir>/broker-<id>/`, a folder the caller chooses and may keep.
"""

from __future__ import annotations

import atexit
import base64
import contextlib
import ctypes
import os
import random
import signal
import socket
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import TracebackType
from typing import Final, Self

from smoothscale.contract import streams_protocol
from smoothscale.sandbox.kafka import jars
from smoothscale.sandbox.kafka.certs import server_certificate
from smoothscale.sandbox.kafka.config import LOOPBACK, NodeConfig, NodePorts, render, server_properties

DEFAULT_RACKS: Final = ("zone-a", "zone-b", "zone-c")
DEFAULT_HEAP: Final = "320m"
READY_TIMEOUT: Final = 120.0
"""A bound for failing, not an expectation: three brokers are ready in 11 s here, 20 s under heavy load."""
STOP_GRACE: Final = 10.0
PORT_FLOOR: Final = 20000
# A quick JIT and a small heap: brokers in tests live for minutes on two shared cores.
JVM_OPTIONS: Final = (
    "-XX:+UseSerialGC",
    "-XX:TieredStopAtLevel=1",
    "-XX:MaxMetaspaceSize=192m",
    "-Djava.awt.headless=true",
)
_PR_SET_PDEATHSIG: Final = 1
_PRCTL: Final = ctypes.CDLL(None).prctl if sys.platform == "linux" else None


class KafkaStartError(RuntimeError):
    """A broker did not come up (the message names the node and quotes the end of its log)."""


@dataclass
class _Node:
    config: NodeConfig
    log_dir: Path
    properties_file: Path
    process: subprocess.Popen[bytes] | None = field(default=None)


class KafkaCluster:
    """One or more Kafka brokers (each also a KRaft controller) on 127.0.0.1; a context manager."""

    def __init__(
        self,
        work_dir: Path,
        log_dir: Path | None = None,
        *,
        brokers: int = 1,
        racks: Sequence[str] | None = None,
        sasl_users: Mapping[str, str] | None = None,
        tls: bool = False,
        heap: str = DEFAULT_HEAP,
        libs: Path | None = None,
        cluster_id: str | None = None,
        streams_assignor: Path | None = None,
        advertise: str | None = None,
        oauthbearer: bool = False,
    ) -> None:
        """`oauthbearer`: the SASL listener also takes OAUTHBEARER logins with unsigned JWTs
        (`config.server_properties`). `advertise`: an address of this host forwarded to loopback, where
        clients elsewhere (a real node's pods) reach the brokers (`forwarded_bootstrap_servers`,
        `config.server_properties`)."""
        if brokers < 1:
            raise ValueError(f"brokers must be at least 1, got {brokers}")
        chosen_racks: Sequence[str | None]
        if racks is not None:
            if len(racks) != brokers:
                raise ValueError(f"racks has {len(racks)} entries for {brokers} brokers")
            chosen_racks = racks
        else:
            chosen_racks = [
                DEFAULT_RACKS[i % len(DEFAULT_RACKS)] if brokers > 1 else None for i in range(brokers)
            ]
        self.work_dir = work_dir
        self.log_dir = log_dir or work_dir / "logs"
        self.sasl_users = dict(sasl_users) if sasl_users is not None else None
        self.certificate = server_certificate(LOOPBACK) if tls else None
        """With `tls`: the CA clients trust (`certificate.ca_pem`) and the brokers' certificate."""
        self._heap = heap
        self._libs = libs
        self.streams_assignor = streams_assignor
        """The jar of smoothscale's broker-side streams assignor, loaded by every node (None: not loaded)."""
        self.cluster_id = cluster_id or base64.urlsafe_b64encode(uuid.uuid4().bytes).rstrip(b"=").decode()
        self.advertise = advertise
        self.oauthbearer = oauthbearer
        with_sasl = sasl_users is not None or oauthbearer
        ports = _free_ports(brokers * (2 + with_sasl + tls + (advertise is not None)))
        self._nodes: dict[int, _Node] = {}
        for index, rack in enumerate(chosen_racks):
            node_id = index + 1
            sasl = ports.pop() if with_sasl else None
            tls_port = ports.pop() if tls else None
            forwarded = ports.pop() if advertise is not None else None
            config = NodeConfig(
                node_id=node_id,
                rack=rack,
                data_dir=work_dir / f"broker-{node_id}" / "data",
                ports=NodePorts(
                    client=ports.pop(), controller=ports.pop(), sasl=sasl, tls=tls_port, forwarded=forwarded
                ),
            )
            self._nodes[node_id] = _Node(
                config=config,
                log_dir=self.log_dir / f"broker-{node_id}",
                properties_file=work_dir / f"broker-{node_id}" / "server.properties",
            )
        self._formatted = False
        self._lock = threading.Lock()

    # -- addresses -------------------------------------------------------------------------------------------

    @property
    def bootstrap_servers(self) -> str:
        """The PLAINTEXT listeners of every node, `host:port,...`."""
        return ",".join(f"{LOOPBACK}:{node.config.ports.client}" for node in self._nodes.values())

    @property
    def sasl_bootstrap_servers(self) -> str:
        """The SASL_PLAINTEXT listeners (PLAIN, OAUTHBEARER); only with `sasl_users` or `oauthbearer`."""
        if self.sasl_users is None and not self.oauthbearer:
            raise ValueError("this cluster was started without sasl_users or oauthbearer")
        return ",".join(f"{LOOPBACK}:{node.config.ports.sasl}" for node in self._nodes.values())

    @property
    def tls_bootstrap_servers(self) -> str:
        """The SSL listeners (certificate signed by `certificate.ca_pem`); only with `tls`."""
        if self.certificate is None:
            raise ValueError("this cluster was started without tls")
        return ",".join(f"{LOOPBACK}:{node.config.ports.tls}" for node in self._nodes.values())

    @property
    def forwarded_ports(self) -> list[int]:
        """The ports of the listeners advertised at `advertise` (bound on 127.0.0.1): to be forwarded."""
        return [node.config.ports.forwarded for node in self._nodes.values() if node.config.ports.forwarded]

    @property
    def forwarded_bootstrap_servers(self) -> str:
        """Those listeners at the advertised address, `host:port,...`; only with `advertise`."""
        if self.advertise is None:
            raise ValueError("this cluster was started without advertise")
        return ",".join(f"{self.advertise}:{port}" for port in self.forwarded_ports)

    @property
    def node_ids(self) -> list[int]:
        return list(self._nodes)

    @property
    def pids(self) -> list[int]:
        """The running JVMs' process ids (each leads its own process group)."""
        return [node.process.pid for node in self._nodes.values() if node.process is not None]

    def rack(self, node_id: int) -> str | None:
        return self._nodes[node_id].config.rack

    def node_log_dir(self, node_id: int) -> Path:
        """Where node `node_id` writes server.log, controller.log and state-change.log."""
        return self._nodes[node_id].log_dir

    # -- life cycle ------------------------------------------------------------------------------------------

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(
        self, kind: type[BaseException] | None, error: BaseException | None, trace: TracebackType | None
    ) -> None:
        self.stop()

    def start(self, timeout: float = READY_TIMEOUT) -> Self:
        """Format (first time only), start every node, wait until all brokers serve metadata."""
        libs = self._libs or jars.install()
        _LIVE.add(self)
        try:
            if not self._formatted:
                self._format(libs)
            for node in self._nodes.values():
                self._spawn(node, libs)
            self.wait_ready(timeout)
        except BaseException:
            self.stop()
            raise
        return self

    def stop(self) -> None:
        """Stop every node (SIGTERM, SIGKILL after the grace period); the data and logs stay."""
        nodes = [node for node in self._nodes.values() if node.process is not None]
        for node in nodes:
            _signal_group(node, signal.SIGTERM)
        deadline = time.monotonic() + STOP_GRACE
        for node in nodes:
            self._reap(node, deadline)
        _LIVE.discard(self)

    def stop_node(self, node_id: int, *, kill: bool = False) -> None:
        """Stop one node (SIGKILL with `kill`: a crash), keeping its data."""
        node = self._nodes[node_id]
        if node.process is None:
            return
        _signal_group(node, signal.SIGKILL if kill else signal.SIGTERM)
        self._reap(node, time.monotonic() + STOP_GRACE)

    def start_node(self, node_id: int, timeout: float = READY_TIMEOUT) -> None:
        """Start a stopped node again, on the same ports and data; returns once the cluster is whole."""
        node = self._nodes[node_id]
        if node.process is None:
            self._spawn(node, self._libs or jars.install())
        self.wait_ready(timeout)

    def wait_ready(self, timeout: float = READY_TIMEOUT) -> None:
        """Until every running node is a registered broker that answers a metadata request."""
        from confluent_kafka.admin import AdminClient  # noqa: PLC0415 - only where brokers are started

        running = {node_id for node_id, node in self._nodes.items() if node.process is not None}
        deadline = time.monotonic() + timeout
        admin = AdminClient({"bootstrap.servers": self.bootstrap_servers, "log_level": 0})
        seen: set[int] = set()
        while time.monotonic() < deadline:
            for node in self._nodes.values():
                if node.process is not None and node.process.poll() is not None:
                    raise KafkaStartError(self._failure(node, f"exited with {node.process.returncode}"))
            with contextlib.suppress(Exception):
                metadata = admin.list_topics(timeout=2)
                seen = set(metadata.brokers)
                if running <= seen:
                    return
            time.sleep(0.2)
        missing = sorted(running - seen)
        raise KafkaStartError(
            self._failure(
                self._nodes[missing[0]], f"not ready after {timeout:.0f} s (brokers seen: {sorted(seen)})"
            )
        )

    # -- internals -------------------------------------------------------------------------------------------

    def _format(self, libs: Path) -> None:
        """`kafka.tools.StorageTool format` for every node, in parallel (each is a JVM start)."""
        voters = [node.config for node in self._nodes.values()]
        formats = []
        for node in self._nodes.values():
            node.properties_file.parent.mkdir(parents=True, exist_ok=True)
            node.log_dir.mkdir(parents=True, exist_ok=True)
            properties = server_properties(
                node.config,
                voters,
                self.sasl_users,
                self.certificate,
                streams_assignor=None if self.streams_assignor is None else streams_protocol.ASSIGNOR_CLASS,
                advertise=self.advertise,
                oauthbearer=self.oauthbearer,
            )
            node.properties_file.write_text(render(properties))
            command = [
                *self._java(libs, node, heap="128m"),
                "kafka.tools.StorageTool",
                "format",
                # One argument: a cluster id may start with '-' (base64url), which would read as an option.
                f"--cluster-id={self.cluster_id}",
                "--config",
                str(node.properties_file),
            ]
            formats.append((node, _popen(command, node.log_dir / "format.out")))
        for node, process in formats:
            try:
                code = process.wait(timeout=120)
            finally:
                _kill_group(process)
            if code != 0:
                output = (node.log_dir / "format.out").read_text(errors="replace")[-2000:]
                raise KafkaStartError(f"formatting broker {node.config.node_id} failed ({code}):\n{output}")
        self._formatted = True

    def _spawn(self, node: _Node, libs: Path) -> None:
        with self._lock:
            if node.process is not None:
                return
            node.log_dir.mkdir(parents=True, exist_ok=True)
            command = [*self._java(libs, node, heap=self._heap), "kafka.Kafka", str(node.properties_file)]
            node.process = _popen(command, node.log_dir / "kafka.out", append=True)

    def _java(self, libs: Path, node: _Node, heap: str) -> list[str]:
        classpath = jars.classpath(libs)
        plugin: list[str] = []
        if self.streams_assignor is not None:
            # The plugin reads its plans from this very cluster (a system property: Kafka 4.4 configures no
            # streams assignor, docs/streams-protocol.md).
            classpath = f"{classpath}{os.pathsep}{self.streams_assignor}"
            plugin = [f"-D{streams_protocol.PLANS_BOOTSTRAP_PROPERTY}={self.bootstrap_servers}"]
        return [
            "java",
            "-Xms64m",
            f"-Xmx{heap}",
            *JVM_OPTIONS,
            *plugin,
            f"-Dkafka.logs.dir={node.log_dir}",
            f"-Dlog4j2.configurationFile={jars.LOG4J_CONFIG}",
            "-cp",
            classpath,
        ]

    def _reap(self, node: _Node, deadline: float) -> None:
        process = node.process
        if process is None:
            return
        with contextlib.suppress(subprocess.TimeoutExpired):
            process.wait(timeout=max(0.1, deadline - time.monotonic()))
        _kill_group(process)
        node.process = None

    def _failure(self, node: _Node, what: str) -> str:
        tail = ""
        for name in ("kafka.out", "server.log"):
            path = node.log_dir / name
            if path.exists():
                tail += f"\n--- {path} (end) ---\n" + path.read_text(errors="replace")[-1500:]
        return f"Kafka broker {node.config.node_id} {what}{tail}"


def _popen(command: list[str], output: Path, *, append: bool = False) -> subprocess.Popen[bytes]:
    with output.open("ab" if append else "wb") as sink:
        return subprocess.Popen(
            command,
            stdin=subprocess.DEVNULL,
            stdout=sink,
            stderr=subprocess.STDOUT,
            start_new_session=True,  # a process group of its own: stop() ends the JVM and anything it forked
            # Runs between fork and exec; it only calls a C function resolved beforehand, taking no lock.
            preexec_fn=_die_with_parent if _PRCTL is not None else None,  # noqa: PLW1509
        )


def _die_with_parent() -> None:
    """In the child before exec: the kernel sends SIGKILL when the launching thread dies."""
    if _PRCTL is not None:
        _PRCTL(_PR_SET_PDEATHSIG, signal.SIGKILL)


def _signal_group(node: _Node, sig: signal.Signals) -> None:
    if node.process is not None:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(node.process.pid, sig)


def _kill_group(process: subprocess.Popen[bytes]) -> None:
    """SIGKILL whatever is left of the process's group, then collect the process."""
    with contextlib.suppress(ProcessLookupError):
        os.killpg(process.pid, signal.SIGKILL)
    process.wait()


def _free_ports(count: int) -> list[int]:
    """`count` distinct ports that 127.0.0.1 has free now, below the kernel's ephemeral range.

    A port is chosen seconds before the JVM binds it (storage is formatted first). Ephemeral ports are what
    every outgoing connection on the machine takes its local port from, Kafka clients' included: one could
    take a chosen port in between and the broker would fail to bind. Below the range only explicit binds
    compete, and the probe skips ports bound now.
    """
    low = _ephemeral_low()
    candidates = random.sample(range(PORT_FLOOR, low), k=min(low - PORT_FLOOR, 64 * count))
    with contextlib.ExitStack() as stack:
        chosen: list[int] = []
        for port in candidates:
            probe = stack.enter_context(socket.socket(socket.AF_INET, socket.SOCK_STREAM))
            try:
                probe.bind((LOOPBACK, port))
            except OSError:
                continue
            chosen.append(port)
            if len(chosen) == count:
                return chosen
    raise KafkaStartError(f"no {count} free ports on {LOOPBACK} between {PORT_FLOOR} and {low}")


def _ephemeral_low(path: Path = Path("/proc/sys/net/ipv4/ip_local_port_range")) -> int:
    """The lowest ephemeral port (Linux's default range starts at 32768)."""
    try:
        return max(PORT_FLOOR + 1000, int(path.read_text().split()[0]))
    except (OSError, ValueError, IndexError):
        return 32768


class _LiveClusters:
    """Clusters started and not yet stopped: stopped at interpreter exit."""

    def __init__(self) -> None:
        self._clusters: list[KafkaCluster] = []
        atexit.register(self._stop_all)

    def add(self, cluster: KafkaCluster) -> None:
        if cluster not in self._clusters:
            self._clusters.append(cluster)

    def discard(self, cluster: KafkaCluster) -> None:
        if cluster in self._clusters:
            self._clusters.remove(cluster)

    def _stop_all(self) -> None:
        for cluster in list(self._clusters):
            cluster.stop()


_LIVE: Final = _LiveClusters()
