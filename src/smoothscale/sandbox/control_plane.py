"""A real Kubernetes control plane on loopback: etcd, kube-apiserver, kube-controller-manager, as processes.

What the embedded emulator cannot vouch for (structural schemas and CEL rules, RBAC, pod validation, the
scale subresource, garbage collection, watch semantics) this checks against the real thing. The binaries
are built from the Go module proxy by `tools/kube/build.sh` (a pinned release, cached per user); `Binaries`
finds them in the folder that script prints.

Set up as controller-runtime's envtest sets up its API server, with what tests of an operator need on top:

- certificates from a throw-away CA (`pki`): the API server serves TLS on 127.0.0.1, the administrator and
  the controller manager authenticate with client certificates in `system:masters`;
- a service-account key pair, so that ServiceAccounts get tokens (TokenRequest) and a process can run as
  one (`RunningControlPlane.service_account_kubeconfig`) under RBAC authorization, as the operator does in
  a cluster;
- an audit log of every request made by a ServiceAccount (`audit.jsonl`), to see what a client used, and
  the OwnerReferencesPermissionEnforcement admission plugin, which some clusters enable;
- kube-controller-manager running only `CONTROLLERS`: a namespace's `default` ServiceAccount (pods cannot
  be created without it), garbage collection by owner references, namespace deletion, the release of
  deleted claims once no pod uses them, and the PodDisruptionBudgets' status (how many pods an eviction may
  take now: without it every eviction is refused). No scheduler, no kubelet: the sandbox's kubelet
  stand-in does their part.

`with ControlPlane(root, Binaries.from_folder(folder)) as cluster:` starts them in that order, waits until
each is ready, and stops them all (in reverse order, SIGTERM then SIGKILL, each in its own process group)
when the block exits, however it exits. Started from the main thread, they are also killed if this process
dies without stopping them (`setpriv --pdeathsig`, from util-linux).
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import socket
import ssl
import subprocess
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar, Self

import kubernetes
import yaml

from . import pki

CONTROLLERS = (
    "serviceaccount-controller",
    "garbage-collector-controller",
    "namespace-controller",
    "persistentvolumeclaim-protection-controller",
    "disruption-controller",
)
"""kube-controller-manager's controllers the sandbox needs (see the module docstring)."""
SERVICE_CLUSTER_IP_RANGE = "10.0.0.0/24"
KUBERNETES_SERVICE_IP = "10.0.0.1"
"""The `kubernetes` Service's ClusterIP (the range's first address), which pods' in-cluster clients dial."""
SERVICE_NAMES = (
    "kubernetes",
    "kubernetes.default",
    "kubernetes.default.svc",
    "kubernetes.default.svc.cluster.local",
)
ISSUER = "https://kubernetes.default.svc.cluster.local"
HOST = "127.0.0.1"
ADMIN_USER = "smoothscale-admin"
CONTEXT_NAME = "smoothscale-control-plane"
AUDIT_POLICY = {
    "apiVersion": "audit.k8s.io/v1",
    "kind": "Policy",
    "omitStages": ["RequestReceived"],
    "rules": [{"level": "Metadata", "userGroups": ["system:serviceaccounts"]}, {"level": "None"}],
}
"""Only ServiceAccounts' requests, once each (when answered), with user, verb, resource and status code."""


class ControlPlaneError(RuntimeError):
    """A component did not start; the message ends with the last lines of its log."""


class KubectlError(RuntimeError):
    """kubectl failed; the message has its standard error."""


@dataclass(frozen=True)
class Binaries:
    """The folder `tools/kube/build.sh` fills: etcd, kube-apiserver, kube-controller-manager, kubectl."""

    folder: Path

    NAMES: ClassVar[tuple[str, ...]] = ("etcd", "kube-apiserver", "kube-controller-manager", "kubectl")
    BUILD: ClassVar[str] = "tools/kube/build.sh"
    """The script that builds them (a subclass names its own folder's)."""

    @classmethod
    def from_folder(cls, folder: str | Path) -> Self:
        """The binaries in `folder`; a clear error naming what is missing and how to build it."""
        found = cls(Path(folder))
        missing = [name for name in cls.NAMES if not os.access(found.folder / name, os.X_OK)]
        if missing:
            raise FileNotFoundError(
                f"{found.folder}: no executable {', '.join(missing)}; build them with {cls.BUILD} "
                "(it prints the folder to use)"
            )
        return found

    def __getitem__(self, name: str) -> str:
        return str(self.folder / name)


@dataclass(frozen=True)
class RunningControlPlane:
    """A started control plane: its URL, the administrator's kubeconfig, and its files under `root`."""

    url: str
    kubeconfig: Path
    ca: Path
    root: Path
    binaries: Binaries
    audit_log: Path

    def kubectl(
        self, *args: str, kubeconfig: Path | None = None, input: str | None = None, check: bool = True
    ) -> subprocess.CompletedProcess[str]:
        """Run the matching kubectl (as the administrator unless `kubeconfig` says otherwise); with `check`,
        a failure raises `KubectlError` with what kubectl said."""
        done = subprocess.run(
            [self.binaries["kubectl"], f"--kubeconfig={kubeconfig or self.kubeconfig}", *args],
            input=input,
            capture_output=True,
            text=True,
            check=False,
            timeout=60,
        )
        if check and done.returncode != 0:
            raise KubectlError(f"kubectl {' '.join(args)} failed ({done.returncode}): {done.stderr.strip()}")
        return done

    def apply_crd(self, manifest: str, name: str, *, field_manager: str = "smoothscale") -> None:
        """Install a CRD by server-side apply (as `kubectl apply --server-side` or helm does) and wait until
        it is established: its schema compiled, its CEL rules within the cost budget, its kind served."""
        self.kubectl("apply", "--server-side", f"--field-manager={field_manager}", "-f", "-", input=manifest)
        self.kubectl("wait", "--for=condition=Established", f"crd/{name}", "--timeout=60s")

    def service_account_kubeconfig(
        self, namespace: str, name: str, path: Path, *, expiration_seconds: int = 24 * 3600
    ) -> Path:
        """A kubeconfig that authenticates as the ServiceAccount `namespace/name` with a fresh token (the
        TokenRequest API, as a projected token volume would give a pod); the account must exist."""
        request = kubernetes.client.AuthenticationV1TokenRequest(
            spec=kubernetes.client.V1TokenRequestSpec(audiences=[], expiration_seconds=expiration_seconds)
        )
        with kubernetes.config.new_client_from_config(config_file=str(self.kubeconfig)) as api:
            issued = kubernetes.client.CoreV1Api(api).create_namespaced_service_account_token(
                name, namespace, request
            )
        token = issued.status.token if issued.status is not None else None
        if not token:
            raise ControlPlaneError(f"no token issued for ServiceAccount {namespace}/{name}")
        return write_kubeconfig(path, self.url, self.ca, {"token": str(token)}, user=f"{namespace}-{name}")


def write_kubeconfig(
    path: Path, url: str, ca: Path, credentials: Mapping[str, str], *, user: str, namespace: str = "default"
) -> Path:
    """A kubeconfig for one user of the control plane at `url` (written atomically, as JSON: YAML to kubectl,
    and what the Java bridge reads)."""
    config = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": CONTEXT_NAME, "cluster": {"server": url, "certificate-authority": str(ca)}}],
        "users": [{"name": user, "user": dict(credentials)}],
        "contexts": [
            {"name": CONTEXT_NAME, "context": {"cluster": CONTEXT_NAME, "user": user, "namespace": namespace}}
        ],
        "current-context": CONTEXT_NAME,
    }
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(json.dumps(config, indent=2))  # JSON is YAML too; the Java bridge reads JSON
    tmp.replace(path)
    return path


class ControlPlane:
    """See the module docstring. Everything it writes (data, certificates, logs) goes under `root`."""

    def __init__(
        self,
        root: Path,
        binaries: Binaries,
        *,
        controllers: Sequence[str] = CONTROLLERS,
        scheduler: Path | None = None,
        startup_timeout: float = 120.0,
        stop_timeout: float = 15.0,
    ) -> None:
        self.root = root
        self.binaries = binaries
        self.controllers = tuple(controllers)
        self.scheduler = scheduler
        self.logs = root / "logs"
        self._startup_timeout = startup_timeout
        self._stop_timeout = stop_timeout
        self._cleanup = contextlib.ExitStack()

    def __enter__(self) -> RunningControlPlane:
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.stop()

    def start(self) -> RunningControlPlane:
        self.logs.mkdir(parents=True, exist_ok=True)
        pki_dir = self.root / "pki"
        ca = pki.CertificateAuthority(pki_dir)
        # Also valid under the `kubernetes` Service's address and names, as pods reach it (a real node).
        serving = ca.serving("kube-apiserver", (HOST, "localhost", KUBERNETES_SERVICE_IP, *SERVICE_NAMES))
        admin = ca.client(ADMIN_USER, ("system:masters",))
        controller_manager = ca.client("system:kube-controller-manager", ("system:masters",))
        accounts = pki.service_account_keys(pki_dir)
        etcd_url = f"http://{HOST}:{free_port()}"
        url = f"https://{HOST}:{free_port()}"
        admin_kubeconfig = self._kubeconfig("admin", url, ca.certificate, admin, ADMIN_USER)
        running = RunningControlPlane(
            url=url,
            kubeconfig=admin_kubeconfig,
            ca=ca.certificate,
            root=self.root,
            binaries=self.binaries,
            audit_log=self.root / "audit.jsonl",
        )
        with self._cleanup as cleanup:
            etcd = self._start(cleanup, "etcd", self._etcd_args(etcd_url))
            self._wait(etcd, "etcd", lambda: _etcd_healthy(etcd_url))
            apiserver = self._start(
                cleanup, "kube-apiserver", self._apiserver_args(etcd_url, url, ca, serving, accounts, running)
            )
            self._wait(apiserver, "kube-apiserver", lambda: _api_ready(url, ca.certificate, admin))
            manager_kubeconfig = self._kubeconfig(
                "kube-controller-manager", url, ca.certificate, controller_manager, "kube-controller-manager"
            )
            manager = self._start(
                cleanup,
                "kube-controller-manager",
                [
                    f"--kubeconfig={manager_kubeconfig}",
                    f"--controllers={','.join(self.controllers)}",
                    "--leader-elect=false",
                    "--secure-port=0",
                    "--use-service-account-credentials=false",
                    # What root-ca-certificate-publisher-controller publishes as `kube-root-ca.crt`: without
                    # it the CA in every pod's token volume is empty (the kubeconfig names the CA's file).
                    f"--root-ca-file={ca.certificate}",
                ],
            )
            if "serviceaccount-controller" in self.controllers:
                self._wait(manager, "kube-controller-manager", lambda: _default_account(admin_kubeconfig))
            if self.scheduler is not None:
                self._start_scheduler(cleanup, url, ca)
            self._cleanup = cleanup.pop_all()  # started: stop() unwinds it
        return running

    def stop(self) -> None:
        """Stop kube-controller-manager, kube-apiserver and etcd, in that order; idempotent."""
        self._cleanup.close()

    # -- the components' command lines -------------------------------------------------------------------

    def _etcd_args(self, client_url: str) -> list[str]:
        peer_url = f"http://{HOST}:{free_port()}"
        return [
            "--name=smoothscale",
            f"--data-dir={self.root / 'etcd'}",
            f"--listen-client-urls={client_url}",
            f"--advertise-client-urls={client_url}",
            f"--listen-peer-urls={peer_url}",
            f"--initial-advertise-peer-urls={peer_url}",
            f"--initial-cluster=smoothscale={peer_url}",
            "--unsafe-no-fsync",  # a test cluster: durability across power loss is of no use
            "--log-level=warn",
        ]

    def _apiserver_args(
        self,
        etcd_url: str,
        url: str,
        ca: pki.CertificateAuthority,
        serving: pki.KeyPair,
        accounts: pki.KeyPair,
        running: RunningControlPlane,
    ) -> list[str]:
        policy = self.root / "audit-policy.yaml"
        policy.write_text(yaml.safe_dump(AUDIT_POLICY))
        return [
            f"--etcd-servers={etcd_url}",
            f"--bind-address={HOST}",
            f"--advertise-address={HOST}",
            f"--secure-port={url.rsplit(':', 1)[1]}",
            f"--tls-cert-file={serving.certificate}",
            f"--tls-private-key-file={serving.key}",
            f"--client-ca-file={ca.certificate}",
            f"--service-account-issuer={ISSUER}",
            f"--service-account-key-file={accounts.certificate}",
            f"--service-account-signing-key-file={accounts.key}",
            f"--service-cluster-ip-range={SERVICE_CLUSTER_IP_RANGE}",
            # No endpoints for the `kubernetes` Service: the reconciler refuses a loopback address.
            "--endpoint-reconciler-type=none",
            "--authorization-mode=RBAC",
            # As OpenShift and hardened clusters run it: setting an owner reference that blocks the owner's
            # deletion needs `update` on the owner's finalizers, which the chart must grant.
            "--enable-admission-plugins=OwnerReferencesPermissionEnforcement",
            "--allow-privileged=true",
            f"--audit-policy-file={policy}",
            f"--audit-log-path={running.audit_log}",
            "--audit-log-format=json",
            "--profiling=false",
        ]

    def _start_scheduler(self, cleanup: contextlib.ExitStack, url: str, ca: pki.CertificateAuthority) -> None:
        """kube-scheduler, as the user `system:kube-scheduler` (its built-in ClusterRole), serving its health
        checks on a free loopback port; ready once it answers /healthz."""
        assert self.scheduler is not None
        user = "system:kube-scheduler"
        kubeconfig = self._kubeconfig("kube-scheduler", url, ca.certificate, ca.client(user), user)
        port = free_port()
        args = [
            f"--kubeconfig={kubeconfig}",
            f"--authentication-kubeconfig={kubeconfig}",
            f"--authorization-kubeconfig={kubeconfig}",
            "--leader-elect=false",
            f"--bind-address={HOST}",
            f"--secure-port={port}",
        ]
        scheduler = self._start(cleanup, "kube-scheduler", args, binary=self.scheduler)
        self._wait(scheduler, "kube-scheduler", lambda: _healthy(f"https://{HOST}:{port}/healthz"))

    def _kubeconfig(self, name: str, url: str, ca: Path, pair: pki.KeyPair, user: str) -> Path:
        credentials = {"client-certificate": str(pair.certificate), "client-key": str(pair.key)}
        return write_kubeconfig(self.root / f"{name}.kubeconfig", url, ca, credentials, user=user)

    # -- processes ----------------------------------------------------------------------------------------

    def _start(
        self, cleanup: contextlib.ExitStack, name: str, args: list[str], *, binary: Path | None = None
    ) -> subprocess.Popen[bytes]:
        with (self.logs / f"{name}.log").open("ab") as log:
            process = subprocess.Popen(
                [*die_with_parent(), str(binary or self.binaries[name]), *args],
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        cleanup.callback(self._terminate, process)
        return process

    def _terminate(self, process: subprocess.Popen[bytes]) -> None:
        terminate_group(process, self._stop_timeout)

    def _wait(self, process: subprocess.Popen[bytes], name: str, ready: Callable[[], bool]) -> None:
        wait_started(process, name, ready, self.logs, self._startup_timeout, ControlPlaneError, poll=0.2)


def terminate_group(process: subprocess.Popen[bytes], timeout: float) -> None:
    """SIGTERM to the process's group, SIGKILL after `timeout` seconds; returns once the process is gone."""
    if process.poll() is not None:
        return
    with contextlib.suppress(ProcessLookupError):
        os.killpg(process.pid, signal.SIGTERM)
    try:
        process.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGKILL)
        process.wait()


def die_with_parent() -> list[str]:
    """A command prefix asking Linux to SIGKILL the child when the thread that started it ends: only from the
    main thread (another thread may end long before the process), and only where util-linux is."""
    setpriv = shutil.which("setpriv")
    if setpriv is None or threading.current_thread() is not threading.main_thread():
        return []
    return [setpriv, "--pdeathsig", "KILL", "--"]


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind((HOST, 0))
        port: int = probe.getsockname()[1]
        return port


def _etcd_healthy(url: str) -> bool:
    try:
        with urllib.request.urlopen(f"{url}/health", timeout=2) as response:
            body: dict[str, Any] = json.load(response)
    except (OSError, ValueError):
        return False
    return body.get("health") == "true"


def _api_ready(url: str, ca: Path, client: pki.KeyPair) -> bool:
    context = ssl.create_default_context(cafile=str(ca))
    context.load_cert_chain(str(client.certificate), str(client.key))
    try:
        with urllib.request.urlopen(f"{url}/readyz", timeout=5, context=context) as response:
            return bool(response.status == 200)
    except (OSError, urllib.error.HTTPError):
        return False


def _healthy(url: str) -> bool:
    """A component's /healthz answers ok (its self-signed serving certificate is not checked)."""
    context = ssl.create_default_context()
    context.check_hostname = False
    context.verify_mode = ssl.CERT_NONE
    try:
        with urllib.request.urlopen(url, timeout=2, context=context) as response:
            return bool(response.status == 200)
    except (OSError, urllib.error.HTTPError):
        return False


def _default_account(kubeconfig: Path) -> bool:
    """The controller manager works: it has made namespace `default`'s `default` ServiceAccount."""
    with kubernetes.config.new_client_from_config(config_file=str(kubeconfig)) as api:
        try:
            kubernetes.client.CoreV1Api(api).read_namespaced_service_account("default", "default")
        except kubernetes.client.ApiException as error:
            if error.status == 404:
                return False
            raise
    return True


def wait_started(
    process: subprocess.Popen[bytes],
    name: str,
    ready: Callable[[], bool],
    logs: Path,
    timeout: float,
    error: type[RuntimeError],
    poll: float,
) -> None:
    """Wait until `ready()`; `error`, ending with the last lines of `logs/<name>.log`, if the process exits
    first or `timeout` seconds pass (the control plane's and the real node's components alike)."""
    deadline = time.monotonic() + timeout
    while not ready():
        if process.poll() is not None:
            raise error(f"{name} exited with {process.returncode}:\n{_tail(logs, name)}")
        if time.monotonic() > deadline:
            raise error(f"{name} not ready after {timeout:.0f} s:\n{_tail(logs, name)}")
        time.sleep(poll)


def _tail(logs: Path, name: str, lines: int = 30) -> str:
    text = (logs / f"{name}.log").read_text(errors="replace").splitlines()
    return "\n".join(text[-lines:])
