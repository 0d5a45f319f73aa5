"""A whole cluster in one process tree: an API server, the kubelet stand-in, the real operator.

The demo and the end-to-end tests both run on it. The API server is the emulator, served from a thread of
this process (so that a test can reach `emulator.faults`), or a real one already running (`ApiServer`: a
`control_plane.ControlPlane`, or any cluster with an administrator's kubeconfig). The operator and every
pod's worker are processes of their own, so that each can be killed, as in a cluster, and real HTTP
connects them all.

The operator is `smoothscale operator --standalone`, exactly as a single-replica Deployment runs it; or, with
`operator_priority`, a replica in kopf's peering as the chart's peered Deployment runs it, beside which
`start_replica` runs others (a rolling update surges them).
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

import kubernetes

from smoothscale.contract import shared_names as contract
from smoothscale.contract.publication import Publication
from smoothscale.sandbox.emulator import EmulatorThread, RunningEmulator, build_emulator

from .api_links import ApiLinks
from .app_process import AppProcess
from .app_view import AppReader
from .kafka_streams import KafkaStreamsCommand, by_runtime
from .kubelet import DEFAULT_ZONES, Kubelet
from .processruntime import worker_runtime
from .records import read_records
from .supervisor import Supervised

# -P: the current directory must not shadow the installed modules (a stray `timeit.py` where the user
# happens to run the demo would otherwise break prometheus_client inside the operator).
OPERATOR_COMMAND = (sys.executable, "-P", "-m", "smoothscale.cli", "operator")
PEERING = "smoothscale"
"""The peering object of peered operators (`operator_priority`), the chart's default name."""


class ApiServer(Protocol):
    """A running API server: its URL and an administrator's kubeconfig."""

    @property
    def url(self) -> str: ...

    @property
    def kubeconfig(self) -> Path: ...


class Sandbox:
    """`with Sandbox(root) as sandbox:` a running cluster; `sandbox.apply(app)` and watch it work.

    Under `root`: `kubeconfig` (the emulator's), `records.jsonl` (the workers' record file),
    `journal.jsonl` (the operator's event journal), `operator.log`, and the kubelet's `sandbox/` (volumes and
    worker logs).

    With `api_server`, the sandbox runs on that server instead of an emulator of its own, and leaves it
    running; `namespace` then keeps the kubelet stand-in to one namespace and is where `apply` and the
    readers go (so that sandboxes of several tests can share a server; the operator serves all namespaces,
    as the chart deploys it), and `operator_kubeconfig` runs the operator with other credentials than the
    administrator's (a ServiceAccount's, as in a cluster). `keep_requests`
    keeps every API request of the emulator for `api_requests()` (a benchmark counting them). With
    `kafka_bootstrap`, the pods of a StreamsApp with `spec.runtime: KafkaStreams` run the Java sample app
    (`kafka_streams.KafkaStreamsCommand`) against that broker; the others run the sample worker. With
    `api_links` too, each of those pods reaches the API server through a link of its own that `api_links.cut`
    can cut (`api_links.ApiLinks`). With `kafka_app` too, those pods run the user's own app instead of the
    sample (`app_process.AppProcess`). The operator serves its own metrics on 127.0.0.1:`metrics_port` (0: a
    free port; a Prometheus that scrapes it needs a fixed one). With `operator_priority` (the sandbox's own
    emulator only), the operator runs in kopf's peering at that priority instead of standalone, and
    `start_replica` adds replicas beside it.
    """

    def __init__(
        self,
        root: Path,
        *,
        zones: Sequence[str] = DEFAULT_ZONES,
        worker_env: Mapping[str, str] | None = None,
        scrape_interval: float = 1.0,
        first_address: str = "127.0.0.2",
        api_port: int = 0,
        api_server: ApiServer | None = None,
        namespace: str | None = None,
        operator_kubeconfig: Path | None = None,
        keep_requests: bool = False,
        kafka_bootstrap: str | None = None,
        api_links: bool = False,
        kafka_app: AppProcess | None = None,
        metrics_port: int = 0,
        operator_priority: int | None = None,
    ) -> None:
        self.root = root
        self.zones = tuple(zones)
        self.namespace = namespace
        self.kubeconfig = root / "kubeconfig" if api_server is None else api_server.kubeconfig
        self.operator_kubeconfig = operator_kubeconfig or self.kubeconfig
        self.record_file = root / "records.jsonl"
        self.journal_file = root / "journal.jsonl"
        self.operator_log = root / "operator.log"
        self._worker_env = dict(worker_env or {})
        self._scrape_interval = scrape_interval
        self._first_address = first_address
        self._api_server = api_server
        self._api_port = api_port
        self._keep_requests = keep_requests
        self._kafka_bootstrap = kafka_bootstrap
        self._api_links = api_links
        self._kafka_app = kafka_app
        self._metrics_port = metrics_port
        self._operator_priority = operator_priority
        self.api_links: ApiLinks | None = None
        self._emulator_thread: EmulatorThread | None = None
        self._cleanup = contextlib.ExitStack()
        self.cluster: ApiServer | None = None
        self.kubelet: Kubelet | None = None
        self._operator = Supervised(self._launch_operator, "the operator")
        self._replicas: dict[str, Supervised] = {}
        self.api: kubernetes.client.ApiClient | None = None

    def __enter__(self) -> Sandbox:
        self.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def start(self) -> None:
        self.root.mkdir(parents=True, exist_ok=True)
        with self._cleanup as cleanup:
            if self._api_server is None:
                built = build_emulator(bookmark_interval=1.0, peering=self._operator_priority is not None)
                if self._keep_requests:
                    built.request_history = None  # else the last 1,000 to 2,000
                if self._operator_priority is not None:  # what the chart creates for peered replicas
                    built.create_object("kopf.dev/v1/clusterkopfpeerings", {"metadata": {"name": PEERING}})
                self._emulator_thread = EmulatorThread(built, port=self._api_port, kubeconfig=self.kubeconfig)
                self.cluster = cleanup.enter_context(self._emulator_thread)
            else:
                self.cluster = self._api_server
            self.api = cleanup.enter_context(
                kubernetes.config.new_client_from_config(config_file=str(self.kubeconfig))
            )
            runtime = worker_runtime(
                self.kubeconfig,
                record_file=self.record_file,
                worker_env=self._worker_env,
                first_address=self._first_address,
            )
            if self._kafka_bootstrap is not None:
                if self._api_links:
                    self.api_links = cleanup.enter_context(ApiLinks(self.kubeconfig, self.root / "api-links"))
                java = KafkaStreamsCommand(
                    self.kubeconfig, self._kafka_bootstrap, self.api_links, app=self._kafka_app
                )
                runtime.command = by_runtime(runtime.command, java)
            self.kubelet = cleanup.enter_context(
                Kubelet(
                    self.kubeconfig,
                    self.root / "sandbox",
                    runtime,
                    zones=self.zones,
                    record_file=self.record_file,
                    namespace=self.namespace,
                )
            )
            cleanup.callback(self.stop_operator)
            cleanup.callback(self._stop_replicas)
            self.start_operator()
            self._cleanup = cleanup.pop_all()  # started: close() unwinds it

    def close(self) -> None:
        """Stop the operator, then every worker (the kubelet), then the API server if this sandbox started it
        (its own emulator)."""
        self._cleanup.close()

    @property
    def emulator(self) -> RunningEmulator:
        """The sandbox's own emulator (for fault injection); an error on a real API server."""
        if not isinstance(self.cluster, RunningEmulator):
            raise TypeError("this sandbox runs on a real API server, not on its own emulator")
        return self.cluster

    def stop_api_server(self) -> None:
        """The sandbox's own API server stops answering, as when its process is down: connections and watches
        end, new ones are refused; what it stores is kept for `start_api_server()`."""
        self._own_emulator().stop_serving()

    def start_api_server(self) -> None:
        """Serve again, on the same port, after `stop_api_server()`."""
        self._own_emulator().start_serving()

    def _own_emulator(self) -> EmulatorThread:
        if self._emulator_thread is None:
            raise TypeError("this sandbox runs on a real API server, not on its own emulator")
        return self._emulator_thread

    # -- the operator ---------------------------------------------------------------------------------------

    @property
    def operator(self) -> subprocess.Popen[bytes] | None:
        """The operator's process (None while stopped, or while a crashed one waits out its back-off)."""
        return self._operator.process

    def start_operator(self) -> None:
        """Run the operator, started again whenever it exits on its own, as its Deployment's pod would be."""
        self._operator.start()

    def _launch_operator(self) -> subprocess.Popen[bytes]:
        return self._launch(self._operator_priority, self.operator_log, self.journal_file, self._metrics_port)

    def _launch(
        self,
        priority: int | None,
        log: Path,
        journal: Path,
        metrics_port: int = 0,
        env: Mapping[str, str] | None = None,
    ) -> subprocess.Popen[bytes]:
        """An operator process: standalone, or peered at `priority`; this process's environment with `env`
        over it."""
        options = {
            "--kubeconfig": self.operator_kubeconfig,
            "--scrape-interval": self._scrape_interval,
            "--scrape-timeout": min(2.0, self._scrape_interval),
            "--debounce": 0.1,
            "--metrics-host": "127.0.0.1",
            "--metrics-port": metrics_port,
            "--journal-file": journal,
        }
        if priority is not None:
            options.update({"--peering": PEERING, "--priority": priority})
        command = [*OPERATOR_COMMAND, *(f"{option}={value}" for option, value in options.items())]
        with log.open("ab") as output:
            return subprocess.Popen(
                [*command, *(["--standalone"] if priority is None else []), "--no-journal-stdout"],
                stdin=subprocess.DEVNULL,
                stdout=output,
                stderr=subprocess.STDOUT,
                env=None if env is None else {**os.environ, **env},
                start_new_session=True,  # a terminal's Ctrl-C goes to the demo, which stops it in order
            )

    def stop_operator(self, *, kill: bool = False) -> None:
        """SIGTERM (kopf stops gracefully) or SIGKILL (a crash); returns once the process is gone. It is not
        started again until `start_operator()`."""
        _stop(self._operator, kill=kill)

    def start_replica(self, name: str, priority: int, env: Mapping[str, str] | None = None) -> None:
        """Another operator replica in the peering at `priority` (the highest acts; the sandbox's operator
        must run peered: `operator_priority`), as a rolling update surges one: its log `operator-<name>.log`
        and journal `journal-<name>.jsonl` under the root, `env` over this process's environment (another
        release's PYTHONPATH), started again when it exits on its own until `stop_replica` or `close`."""
        if self._operator_priority is None:
            raise TypeError("a replica needs a peered operator: Sandbox(operator_priority=...)")
        log, journal = self.root / f"operator-{name}.log", self.root / f"journal-{name}.jsonl"
        replica = self._replicas[name] = Supervised(
            lambda: self._launch(priority, log, journal, env=env), f"operator replica {name}"
        )
        replica.start()

    def stop_replica(self, name: str, *, kill: bool = False) -> None:
        """As `stop_operator`, for the replica `name`."""
        _stop(self._replicas.pop(name), kill=kill)

    def _stop_replicas(self) -> None:
        for name in list(self._replicas):
            self.stop_replica(name)

    # -- reading and changing the cluster -----------------------------------------------------------------

    @property
    def core(self) -> kubernetes.client.CoreV1Api:
        return kubernetes.client.CoreV1Api(self.api)

    @property
    def custom(self) -> kubernetes.client.CustomObjectsApi:
        return kubernetes.client.CustomObjectsApi(self.api)

    def _namespace(self, namespace: str | None) -> str:
        """Where a call without a namespace goes: the sandbox's namespace, else `default`."""
        return namespace or self.namespace or "default"

    def apply(self, app: Mapping[str, Any]) -> None:
        """Create the app: in the sandbox's namespace when it has one, else in the app's own."""
        namespace = self.namespace or app["metadata"].get("namespace", "default")
        body = {**app, "metadata": {**app["metadata"], "namespace": namespace}}
        self.custom.create_namespaced_custom_object(
            contract.GROUP, contract.VERSION, namespace, contract.PLURAL, body
        )

    def patch_app(self, name: str, patch: Mapping[str, Any], namespace: str | None = None) -> None:
        namespace = self._namespace(namespace)
        self.custom.patch_namespaced_custom_object(
            contract.GROUP, contract.VERSION, namespace, contract.PLURAL, name, dict(patch)
        )

    @property
    def reader(self) -> AppReader:
        """Reads of the app, its pods and its publication, in the sandbox's namespace by default."""
        if self.api is None:
            raise RuntimeError("the sandbox is not started")
        return AppReader(self.api, self._namespace(None), self.zones)

    def app(self, name: str, namespace: str | None = None) -> dict[str, Any]:
        return self.reader.app(name, namespace)

    def pods(self, app: str, namespace: str | None = None) -> list[dict[str, Any]]:
        """The app's pods as the API returns them (plain JSON)."""
        return self.reader.pods(app, namespace)

    def publication(self, app: str, namespace: str | None = None) -> Publication | None:
        """The generation the operator published last, or None before the first."""
        return self.reader.publication(app, namespace)

    def annotate(self, pod: str, annotations: Mapping[str, str | None], namespace: str | None = None) -> None:
        self.core.patch_namespaced_pod(
            pod, self._namespace(namespace), {"metadata": {"annotations": dict(annotations)}}
        )

    def records(self) -> list[dict[str, Any]]:
        return read_records(self.record_file)

    def api_requests(self) -> list[ApiRequest]:
        """The requests the API server answered, oldest first (every one with `keep_requests=True`)."""
        if self._emulator_thread is None:
            raise RuntimeError("api_requests() needs the sandbox's own emulator")
        emulator = self.emulator.emulator
        return self._emulator_thread.call(
            lambda: [
                ApiRequest(str(r.method.value).upper(), r.url.path, r.headers.get("User-Agent", ""))
                for r in emulator
            ]
        )


@dataclass(frozen=True)
class ApiRequest:
    """One request to the API server: its method, its path and who sent it (the User-Agent header)."""

    method: str
    path: str
    agent: str


def _stop(supervised: Supervised, *, kill: bool) -> None:
    """End a supervised operator for good: SIGTERM (kopf stops gracefully, leaving the peering) or SIGKILL (a
    crash); returns once the process is gone."""
    process = supervised.stop()
    if process is None or process.poll() is not None:
        return
    process.send_signal(signal.SIGKILL if kill else signal.SIGTERM)
    try:
        process.wait(timeout=15)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()
