"""A real Kubernetes node on this machine: containerd 2.x with runc and the CNI bridge, and a kubelet
registered with the sandbox's control plane under a zone label.

The binaries come from `tools/node/build.sh` (containerd, its runc shim and ctr from the Go module proxy;
the kubelet from the API server's own Kubernetes module); runc and the CNI plugins are Debian's. Images
cannot be pulled here: `tools/node/images.sh` saves the locally built images, the pod sandbox ("pause")
image among them, into one archive that `RealNode` imports into containerd before the kubelet starts, so
pods use `imagePullPolicy: Never` (or `IfNotPresent`).

What this machine needs, each found by a failing start (docs/real-node.md):

- `restrict_oom_score_adj`: root here lacks CAP_SYS_RESOURCE, so runc cannot lower a process's
  oom_score_adj; the kubelet asks -998 for every pod sandbox and runc's init died with "failed to update
  /proc/self/oom_score_adj: Permission denied" (runc reported only "can't get final child's PID from pipe:
  EOF"). containerd then keeps every container's score at or above its own.
- cgroup v1 without systemd: the kubelet's `failCgroupV1: false` and `cgroupDriver: cgroupfs`, runc's
  `SystemdCgroup = false`.
- the kubelet binds to 127.0.0.1 and gets free ports; containerd's sockets, state, runc's state, network
  namespaces, the CNI bridge's leases and pod logs all live under `root`, so that nothing of another
  containerd on the machine is touched.
- no kube-proxy: the node forwards the `kubernetes` Service's ClusterIP to the API server on loopback
  itself (a DNAT rule for packets from the pods' bridge, `route_localnet` on it), so that pods' in-cluster
  clients (the operator installed by the chart, the apps' pods) work unchanged; the pods' default route
  goes through the bridge (`isDefaultGateway`). Likewise `RunningNode.forward(ports)`: servers of the host
  that listen on loopback only (the sandbox's Kafka brokers) are reached by pods at the bridge's gateway
  address (`RunningNode.gateway`), each port forwarded to the same port on 127.0.0.1.

`with RealNode(root, folder, control_plane, name=..., zone=..., images=archive, sandbox_image=...) as node:`
starts containerd, imports the images, starts the kubelet and waits until the node is Ready. On exit,
however it exits, it cordons the node, deletes the pods bound to it and waits for the kubelet to stop them,
stops the kubelet, kills what containers remain, stops containerd, unmounts what they left mounted under
`root`, and removes the forwarding rule and the bridge.
"""

from __future__ import annotations

import contextlib
import ipaddress
import json
import os
import subprocess
import time
import urllib.parse
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

import kubernetes

from .control_plane import (
    HOST,
    Binaries,
    RunningControlPlane,
    die_with_parent,
    free_port,
    terminate_group,
    wait_started,
)

ZONE_LABEL = "topology.kubernetes.io/zone"
NAMES = ("containerd", "containerd-shim-runc-v2", "ctr", "kubelet", "kube-scheduler")
CRI_NAMESPACE = "k8s.io"
RUNC = "/usr/sbin/runc"
CNI_PLUGINS = "/usr/lib/cni"
SOCKET_LIMIT = 100
"""A unix socket's path must fit in 108 bytes; containerd adds a suffix to its ttrpc socket's."""


class RealNodeError(RuntimeError):
    """The node did not start; the message ends with the last lines of the failing component's log."""


@dataclass(frozen=True)
class NodeBinaries(Binaries):
    """The folder `tools/node/build.sh` fills: containerd, containerd-shim-runc-v2, ctr, the kubelet, and
    kube-scheduler (for the control plane: pods not bound by hand reach a real node through it)."""

    NAMES = NAMES
    BUILD = "tools/node/build.sh"


@dataclass(frozen=True)
class RunningNode:
    """A started node: its name and zone, containerd's socket, and its files under `root`."""

    name: str
    zone: str
    root: Path
    socket: Path
    binaries: NodeBinaries
    bridge: str
    gateway: str
    """The pods' bridge's address: where pods reach the host's forwarded ports (`forward`)."""

    def ctr(self, *args: str) -> str:
        """Run ctr against this node's containerd, in the CRI's namespace; its standard output."""
        done = subprocess.run(
            [self.binaries["ctr"], f"--address={self.socket}", f"--namespace={CRI_NAMESPACE}", *args],
            capture_output=True,
            text=True,
            check=False,
            timeout=300,
        )
        if done.returncode != 0:
            raise RealNodeError(f"ctr {' '.join(args)} failed ({done.returncode}): {done.stderr.strip()}")
        return done.stdout

    def tasks(self) -> list[str]:
        """The ids of containerd's tasks (running containers, pod sandboxes included)."""
        return self.ctr("tasks", "list", "--quiet").split()

    @contextlib.contextmanager
    def forward(self, ports: Sequence[int], address: str | None = None) -> Iterator[None]:
        """This node's pods reach each of `ports` of the host's loopback (servers bound to 127.0.0.1 only, the
        sandbox's brokers) at `address` (by default the gateway's; another node's gateway, for servers that
        advertise that one), the same port: DNAT rules for packets from the pods' bridge, as for the API
        server (`route_localnet` is on). Removed on exit."""
        to = address or self.gateway
        with forwarded(self.bridge, [(to, port, f"{HOST}:{port}") for port in ports]):
            yield


class RealNode:
    """See the module docstring. Everything it writes (state, configuration, logs) goes under `root`."""

    def __init__(
        self,
        root: Path,
        binaries: NodeBinaries,
        control_plane: RunningControlPlane,
        *,
        name: str,
        zone: str,
        images: Path,
        sandbox_image: str,
        pod_subnet: str = "10.244.27.0/24",
        bridge: str = "smoothscale0",
        cgroup_root: str | None = None,
        startup_timeout: float = 120.0,
        stop_timeout: float = 60.0,
    ) -> None:
        self.root = root
        self.binaries = binaries
        self.control_plane = control_plane
        self.name = name
        self.zone = zone
        self.images = images
        self.sandbox_image = sandbox_image
        self.pod_subnet = pod_subnet
        self.bridge = bridge
        self.cgroup_root = cgroup_root or f"/smoothscale-{name}"
        """The kubelet's `cgroupRoot`, made in every cgroup hierarchy before it starts and removed after: with
        the default root every kubelet of the machine would own `/kubepods`, and each would remove the
        other's pods' cgroups as orphans."""
        network = ipaddress.ip_network(pod_subnet)
        self.gateway = str(next(network.hosts()))
        self._prefix = network.prefixlen
        self.logs = root / "logs"
        self.socket = root / "containerd.sock"
        self._startup_timeout = startup_timeout
        self._stop_timeout = stop_timeout
        self._cleanup = contextlib.ExitStack()
        if len(str(self.socket)) > SOCKET_LIMIT:
            raise ValueError(
                f"root {root} is too long for containerd's socket ({len(str(self.socket))} > {SOCKET_LIMIT} "
                "bytes with 'containerd.sock'): choose a shorter folder"
            )

    def __enter__(self) -> RunningNode:
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.stop()

    def start(self) -> RunningNode:
        self.logs.mkdir(parents=True, exist_ok=True)
        running = RunningNode(
            self.name, self.zone, self.root, self.socket, self.binaries, self.bridge, self.gateway
        )
        with self._cleanup as cleanup:
            cleanup.callback(self._unmount_and_unbridge)
            self._bridge_up()
            _make_cgroups(self.cgroup_root)
            cleanup.callback(_remove_cgroups, self.cgroup_root)
            cleanup.enter_context(self._api_server_service())
            containerd = self._start(
                cleanup, "containerd", [self.binaries["containerd"], f"--config={self._containerd_config()}"]
            )
            cleanup.callback(self._kill_containers, running)
            self._wait(containerd, "containerd", self.socket.exists)
            running.ctr("images", "import", str(self.images))
            kubelet = self._start(cleanup, "kubelet", self._kubelet_args())
            cleanup.callback(self._delete_pods)
            self._wait(kubelet, "kubelet", self._node_ready)
            self._cleanup = cleanup.pop_all()  # started: stop() unwinds it
        return running

    def stop(self) -> None:
        """Delete the node's pods, stop the kubelet and containerd, clean up; idempotent."""
        self._cleanup.close()

    # -- configuration ------------------------------------------------------------------------------------

    def _containerd_config(self) -> Path:
        cni = self.root / "cni"
        cni.mkdir(exist_ok=True)
        conflist = {
            "cniVersion": "1.0.0",
            "name": "smoothscale",
            "plugins": [
                {
                    "type": "bridge",
                    "bridge": self.bridge,
                    "isGateway": True,
                    # the pods' default route: to the `kubernetes` Service's ClusterIP (forwarded to the API
                    # server, `_api_server_service`) and to anything else of the host
                    "isDefaultGateway": True,
                    "ipMasq": False,
                    "hairpinMode": True,
                    "ipam": {
                        "type": "host-local",
                        "ranges": [[{"subnet": self.pod_subnet}]],
                        "dataDir": str(self.root / "cni-leases"),
                    },
                },
                {"type": "loopback"},
            ],
        }
        (cni / "10-smoothscale.conflist").write_text(json.dumps(conflist))
        cri = 'plugins."io.containerd.cri.v1.runtime"'
        runc = f"{cri}.containerd.runtimes.runc"
        config = f"""version = 3
root = "{self.root / "containerd"}"
state = "{self.root / "state"}"
[grpc]
  address = "{self.socket}"
[ttrpc]
  address = "{self.socket}.ttrpc"
[debug]
  level = "info"
[{cri}]
  restrict_oom_score_adj = true
  netns_mounts_under_state_dir = true
  [{cri}.containerd]
    default_runtime_name = "runc"
  [{runc}]
    runtime_type = "io.containerd.runc.v2"
  [{runc}.options]
    BinaryName = "{RUNC}"
    Root = "{self.root / "runc"}"
    SystemdCgroup = false
  [{cri}.cni]
    bin_dirs = ["{CNI_PLUGINS}"]
    conf_dir = "{cni}"
[plugins."io.containerd.cri.v1.images".pinned_images]
  sandbox = "{self.sandbox_image}"
"""
        path = self.root / "containerd.toml"
        path.write_text(config)
        return path

    def _kubelet_args(self) -> list[str]:
        config = {
            "apiVersion": "kubelet.config.k8s.io/v1beta1",
            "kind": "KubeletConfiguration",
            "failCgroupV1": False,
            "cgroupDriver": "cgroupfs",
            "cgroupRoot": self.cgroup_root,
            "address": HOST,
            "port": free_port(),
            "readOnlyPort": 0,
            "healthzBindAddress": HOST,
            "healthzPort": free_port(),
            "authentication": {"anonymous": {"enabled": True}, "webhook": {"enabled": False}},
            "authorization": {"mode": "AlwaysAllow"},
            "failSwapOn": False,
            "enforceNodeAllocatable": [],
            # the machine's disk is shared and often fuller than the kubelet's defaults allow
            "evictionHard": {
                "memory.available": "100Mi",
                "nodefs.available": "1%",
                "imagefs.available": "1%",
            },
            "imageGCHighThresholdPercent": 100,
            "localStorageCapacityIsolation": False,
            "containerRuntimeEndpoint": f"unix://{self.socket}",
            "podLogsDir": str(self.root / "pod-logs"),
            "resolvConf": "/etc/resolv.conf",
        }
        path = self.root / "kubelet.json"
        path.write_text(json.dumps(config))
        return [
            self.binaries["kubelet"],
            f"--config={path}",
            f"--kubeconfig={self.control_plane.kubeconfig}",
            f"--hostname-override={self.name}",
            f"--node-labels={ZONE_LABEL}={self.zone}",
            f"--root-dir={self.root / 'kubelet'}",
            f"--cert-dir={self.root / 'kubelet-pki'}",
        ]

    # -- readiness and teardown ---------------------------------------------------------------------------

    def _node_ready(self) -> bool:
        with kubernetes.config.new_client_from_config(config_file=str(self.control_plane.kubeconfig)) as api:
            try:
                node = kubernetes.client.CoreV1Api(api).read_node(self.name)
            except kubernetes.client.ApiException as error:
                if error.status == 404:
                    return False
                raise
        conditions = node.status.conditions or [] if node.status is not None else []
        return any(c.type == "Ready" and c.status == "True" for c in conditions)

    def _delete_pods(self) -> None:
        """Cordon the node (the scheduler binds no pod to it any more: controllers that replace deleted pods,
        a ReplicaSet's or the operator's, would refill it), delete every pod bound to it at once and wait
        until the kubelet has stopped their containers and torn down their networks (its own way out), or
        `stop_timeout`; what remains is killed later."""
        with kubernetes.config.new_client_from_config(config_file=str(self.control_plane.kubeconfig)) as api:
            core = kubernetes.client.CoreV1Api(api)
            with contextlib.suppress(kubernetes.client.ApiException):
                core.patch_node(self.name, {"spec": {"unschedulable": True}})
            selector = f"spec.nodeName={self.name}"
            for pod in core.list_pod_for_all_namespaces(field_selector=selector).items:
                meta = pod.metadata or kubernetes.client.V1ObjectMeta()
                with contextlib.suppress(kubernetes.client.ApiException):
                    core.delete_namespaced_pod(str(meta.name), str(meta.namespace), grace_period_seconds=0)
            deadline = time.monotonic() + self._stop_timeout
            while time.monotonic() < deadline:
                if not core.list_pod_for_all_namespaces(field_selector=selector).items:
                    return
                time.sleep(0.5)

    def _kill_containers(self, running: RunningNode) -> None:
        """SIGKILL every task left, then delete tasks and containers: their shims exit with them."""
        with contextlib.suppress(RealNodeError):
            for task in running.tasks():
                with contextlib.suppress(RealNodeError):
                    running.ctr("tasks", "kill", "--signal=SIGKILL", task)
            deadline = time.monotonic() + 10
            while running.tasks() and time.monotonic() < deadline:
                for task in running.tasks():
                    with contextlib.suppress(RealNodeError):
                        running.ctr("tasks", "delete", "--force", task)
            for container in running.ctr("containers", "list", "--quiet").split():
                with contextlib.suppress(RealNodeError):
                    running.ctr("containers", "delete", container)

    def _bridge_up(self) -> None:
        """The pods' bridge with its gateway address, made before any pod so that servers of the host (the
        API server's forward, Kafka's brokers) can listen on that address; the CNI bridge plugin takes
        the bridge as it finds it."""
        _ip("link", "add", "name", self.bridge, "type", "bridge")
        _ip("addr", "add", f"{self.gateway}/{self._prefix}", "dev", self.bridge)
        _ip("link", "set", self.bridge, "up")

    @contextlib.contextmanager
    def _api_server_service(self) -> Iterator[None]:
        """The `kubernetes` Service's ClusterIP forwarded to the API server on loopback, as kube-proxy would
        forward it (no kube-proxy runs): a DNAT rule for packets from the pods' bridge, and `route_localnet`
        on the bridge so that the kernel routes them to 127.0.0.1. Pods' in-cluster clients then work
        unchanged, and the API server stays bound to loopback. Removed on exit."""
        with kubernetes.config.new_client_from_config(config_file=str(self.control_plane.kubeconfig)) as api:
            service = kubernetes.client.CoreV1Api(api).read_namespaced_service("kubernetes", "default").spec
        if service is None or not service.ports or not service.cluster_ip:
            raise RealNodeError("the API server made no `kubernetes` Service with a ClusterIP and a port")
        target = urllib.parse.urlsplit(self.control_plane.url)
        Path(f"/proc/sys/net/ipv4/conf/{self.bridge}/route_localnet").write_text("1")
        with forwarded(
            self.bridge, [(service.cluster_ip, service.ports[0].port, f"{target.hostname}:{target.port}")]
        ):
            yield

    def _unmount_and_unbridge(self) -> None:
        """Unmount what the kubelet and containerd left under `root` (volumes, network namespaces, shared
        memory), deepest first, and remove the pods' bridge."""
        with open("/proc/self/mountinfo") as table:
            points = [line.split()[4] for line in table]
        prefix = f"{self.root}/"
        for point in sorted((p for p in points if p.startswith(prefix)), key=len, reverse=True):
            subprocess.run(["umount", "--lazy", point], capture_output=True, check=False)
        subprocess.run(["ip", "link", "delete", self.bridge], capture_output=True, check=False)

    # -- processes ----------------------------------------------------------------------------------------

    def _start(self, cleanup: contextlib.ExitStack, name: str, args: list[str]) -> subprocess.Popen[bytes]:
        with (self.logs / f"{name}.log").open("ab") as log:
            process = subprocess.Popen(
                [*die_with_parent(), *args],
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,
                # containerd finds its shim on the PATH
                env={**os.environ, "PATH": f"{self.binaries.folder}:{os.environ.get('PATH', '')}"},
            )
        cleanup.callback(terminate_group, process, 15.0)
        return process

    def _wait(self, process: subprocess.Popen[bytes], name: str, ready: Callable[[], bool]) -> None:
        wait_started(process, name, ready, self.logs, self._startup_timeout, RealNodeError, poll=0.5)


@contextlib.contextmanager
def forwarded(bridge: str, forwards: Sequence[tuple[str, int, str]]) -> Iterator[None]:
    """For packets from `bridge`'s pods, each (address, port, to) a DNAT rule from address:port to `to`;
    removed on exit."""
    with contextlib.ExitStack() as added:
        for address, port, to in forwards:
            rule = [
                "PREROUTING", "--in-interface", bridge, "--protocol", "tcp",
                "--destination", f"{address}/32", "--destination-port", str(port),
                "--jump", "DNAT", "--to-destination", to,
            ]  # fmt: skip
            _iptables("--append", *rule)
            added.callback(_iptables, "--delete", *rule)
        yield


def _hierarchies() -> list[Path]:
    """The mount points of the machine's cgroup hierarchies (v1 controllers, and v2's if mounted)."""
    with open("/proc/self/mounts") as table:
        return [Path(fields[1]) for fields in map(str.split, table) if fields[2] in ("cgroup", "cgroup2")]


def _make_cgroups(root: str) -> None:
    """`root` in every hierarchy; a new cpuset gets its parent's CPUs and memory nodes (cgroup v1 leaves
    them empty, and no process could join it)."""
    for hierarchy in _hierarchies():
        path = hierarchy / root.strip("/")
        path.mkdir(parents=True, exist_ok=True)
        for name in ("cpuset.cpus", "cpuset.mems"):
            if (path / name).exists() and not (path / name).read_text().strip():
                (path / name).write_text((path.parent / name).read_text())


def _remove_cgroups(root: str) -> None:
    """`root` and what the kubelet made under it (QoS and pod cgroups), deepest first, once no process is
    left in them; a cgroup still in use stays."""
    for hierarchy in _hierarchies():
        top = hierarchy / root.strip("/")
        if not top.is_dir():
            continue
        for folder, _, _ in sorted(os.walk(top), key=lambda walked: len(walked[0]), reverse=True):
            with contextlib.suppress(OSError):
                os.rmdir(folder)


def _ip(*args: str) -> None:
    done = subprocess.run(["ip", *args], capture_output=True, text=True, check=False)
    if done.returncode != 0 and "File exists" not in done.stderr:
        raise RealNodeError(f"ip {' '.join(args)} failed ({done.returncode}): {done.stderr.strip()}")


def _iptables(*args: str) -> None:
    done = subprocess.run(["iptables", "--table", "nat", *args], capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise RealNodeError(f"iptables {' '.join(args)} failed ({done.returncode}): {done.stderr.strip()}")
