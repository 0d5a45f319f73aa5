"""`StreamsClient`: what a pod of a StreamsApp runs beside its processing loop.

It follows the app's assignment ConfigMap (through the API, or the mounted volume when the pod has no API
access), applies every newer generation through the app's `TaskListener`, serves the Contract 3 metrics,
and tells the app when its own pod is marked leaving. The app reports lags through `client.metrics`. When
the app has a lease (`spec.failover.leaseSeconds`), it renews the pod's Lease and fences the pod when it
cannot (`lease.py`): the app's processing loop asks `may_process()` before each batch.
"""

from __future__ import annotations

import hashlib
import logging
import os
import threading
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import kubernetes

from smoothscale.contract import shared_names as contract
from smoothscale.contract.configmap import CorruptAssignment, from_configmap
from smoothscale.contract.publication import Publication

from .applier import AssignmentApplier, TaskListener
from .follow import Body, MountedDirFollower, follow_object
from .lease import LeaseKeeper
from .metrics import TaskMetrics
from .publication import from_mounted_dir

log = logging.getLogger(__name__)

USER_AGENT = "smoothscale-client"
"""How the pods' API requests introduce themselves: they read (list and watch), and write their Lease."""


@dataclass(frozen=True)
class ClientConfig:
    """Where the pod is and how it reaches its assignment.

    The API is used when `kubeconfig` is given or the process runs in a cluster; otherwise the assignment is
    read from `assignment_dir`, the mounted ConfigMap (and leaving is not watched: it needs the API).
    `metrics_port=None` serves no metrics (the app exports `metrics.registry` itself). `lease_seconds`
    (the operator sets `SMOOTHSCALE_LEASE_SECONDS` from `spec.failover.leaseSeconds`) makes the pod renew
    a Lease and process its actives only while it holds it; it needs the API.
    """

    pod: str
    namespace: str
    app: str
    configmap: str | None = None
    kubeconfig: Path | None = None
    assignment_dir: Path | None = None
    metrics_host: str = "0.0.0.0"
    metrics_port: int | None = contract.DEFAULT_METRICS_PORT
    watch_seconds: float = 10.0
    poll_seconds: float = 0.5
    lease_seconds: float | None = None

    @property
    def configmap_name(self) -> str:
        return self.configmap or contract.assignment_configmap(self.app)


def api_client(kubeconfig: Path | None) -> kubernetes.client.ApiClient | None:
    """A client from an explicit kubeconfig, or the in-cluster service account, or None (no API here).

    Explicit on purpose: the `kubernetes` package reads $KUBECONFIG once, at import, which is wrong for a
    test or a sandbox that starts its API server later.
    """
    if kubeconfig is not None:
        client: kubernetes.client.ApiClient = kubernetes.config.new_client_from_config(
            config_file=str(kubeconfig)
        )
        return client
    if os.environ.get("KUBERNETES_SERVICE_HOST"):
        configuration = kubernetes.client.Configuration()
        kubernetes.config.load_incluster_config(client_configuration=configuration)
        return kubernetes.client.ApiClient(configuration)
    return None


class StreamsClient:
    """Assignment watch, Contract 3 metrics and leaving, for one pod. Use as a context manager, or
    `start()` then `close()`."""

    def __init__(self, config: ClientConfig, listener: TaskListener) -> None:
        self.config = config
        self.metrics = TaskMetrics()
        self.applier = AssignmentApplier(
            config.pod,
            listener,
            on_applied=self.metrics.set_generation,
            fenced=config.lease_seconds is not None,
        )
        self.lease: LeaseKeeper | None = None
        self._following = False
        self.metrics_port: int | None = None
        self._listener = listener
        self._stop = threading.Event()
        self._api: kubernetes.client.ApiClient | None = None
        self._rejected: str | None = None
        self._leaving: str | None = None

    def __enter__(self) -> StreamsClient:
        self.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def start(self) -> None:
        config = self.config
        if config.metrics_port is not None:
            self.metrics_port = self.metrics.serve(config.metrics_host, config.metrics_port)
        self._api = api_client(config.kubeconfig)
        if config.lease_seconds is not None and self._api is None:
            raise ValueError(
                f"a lease ({contract.LEASE_SECONDS_ENV}={config.lease_seconds}) needs API access: give the "
                "pod a ServiceAccount that may get, create and update its Lease, or remove spec.failover"
            )
        if self._api is not None:
            self._api.user_agent = f"{USER_AGENT} ({config.namespace}/{config.pod})"  # for audit logs
            core = kubernetes.client.CoreV1Api(self._api)
            if config.lease_seconds is not None:  # before the followers: the pod's own object names its uid
                self.lease = LeaseKeeper(
                    self._api,
                    namespace=config.namespace,
                    pod=config.pod,
                    app=config.app,
                    seconds=config.lease_seconds,
                    on_lost=self.applier.fence,
                    on_held=self.applier.unfence,
                    applied=lambda: self.applier.generation,
                    stop=self._stop,
                )
                self.lease.start()
            for name, list_function, handle in (
                (config.configmap_name, core.list_namespaced_config_map, self._on_configmap),
                (config.pod, core.list_namespaced_pod, self._on_own_pod),
            ):
                follow_object(
                    list_function,
                    config.namespace,
                    name,
                    handle,
                    self._stop,
                    watch_seconds=config.watch_seconds,
                ).start()
        elif config.assignment_dir is not None:
            MountedDirFollower(
                config.assignment_dir, self._on_mounted_dir, self._stop, poll_seconds=config.poll_seconds
            ).start()
        else:
            raise ValueError("no API access (kubeconfig or in-cluster) and no mounted assignment directory")
        log.info(
            "pod %s of app %s follows %s (%s)",
            config.pod,
            config.app,
            config.configmap_name,
            "API" if self._api is not None else config.assignment_dir,
        )

    def close(self) -> None:
        """Stop following (no callback starts after this returns) and stop serving metrics."""
        self._stop.set()
        if self.lease is not None:
            self.lease.close()
        self.metrics.close()
        if self._api is not None:
            self._api.close()

    def may_process(self) -> bool:
        """The pod may process its actives now: it has no lease, or holds it short of the margin. A
        processing loop asks before each batch: after a pause (a stopped process, a long GC) the lease may
        have run out before the fence's callbacks could run."""
        return self.lease is None or (self.lease.holds() and not self.applier.fenced)

    # -- what the followers deliver ------------------------------------------------------------------------

    def _on_configmap(self, body: Body | None) -> None:
        if body is not None:  # None: not published yet (or deleted): keep the current work
            self._offer(lambda: from_configmap(body), _fingerprint(body))
        self._follows()

    def _on_mounted_dir(self, directory: Path) -> None:
        try:
            stat = (directory / contract.ASSIGNMENT_KEY).stat()
        except FileNotFoundError:
            pass  # not published yet
        else:
            self._offer(lambda: from_mounted_dir(directory), f"{stat.st_mtime_ns}:{stat.st_size}")
        self._follows()

    def _follows(self) -> None:
        """The first read of the assignment is done: report the applied generation from now on (0 if none).

        The metric appears only now, on purpose: the operator moves a running task only to a pod that
        reports a generation, which then starts it within one watch event of the generation that assigns
        it. A pod whose client is still starting would start it only once its first read is done."""
        if not self._following:
            self._following = True
            self.metrics.set_generation(self.applier.generation)

    def _offer(self, read: Callable[[], Publication], fingerprint: str) -> None:
        try:
            publication = read()
        except CorruptAssignment as error:
            if fingerprint != self._rejected:
                log.warning(
                    "pod %s ignores a corrupt assignment in %s: %s; current work continues (generation %d)",
                    self.config.pod,
                    self.config.configmap_name,
                    error,
                    self.applier.generation,
                )
                self._rejected = fingerprint
            return
        self.applier.offer(publication)

    def _on_own_pod(self, body: Body | None) -> None:
        metadata = (body or {}).get("metadata") or {}
        if self.lease is not None and metadata.get("uid"):
            self.lease.owned_by(str(metadata["uid"]))
        annotations = metadata.get("annotations") or {}
        value = annotations.get(contract.LEAVING_ANNOTATION)
        if value is not None and self._leaving is None:
            log.info("pod %s is leaving (%s=%r)", self.config.pod, contract.LEAVING_ANNOTATION, value)
            self._listener.on_leaving(str(value))
        self._leaving = None if value is None else str(value)


def _fingerprint(body: Body) -> str:
    """Identifies one version of the ConfigMap, so that a rejected one is logged once, not at every resync."""
    metadata = body.get("metadata") or {}
    version = metadata.get("resourceVersion")
    return str(version) if version else hashlib.sha256(repr(body).encode()).hexdigest()
