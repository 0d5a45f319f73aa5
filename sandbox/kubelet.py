"""The kubelet stand-in: runs a sample worker process for every pod of the emulated cluster.

What it does, as a kubelet (and a scheduler, and a volume provisioner) would:

- creates one Node per zone (`sandbox-<zone>`, label `topology.kubernetes.io/zone`) and binds each new pod
  to the node of a zone it accepts (`scheduling.py`) through `pods/binding`, as a scheduler does, adding its
  finalizer first;
- starts `smoothscale worker` for each bound pod, on a loopback IP of the pod's own (`addresses.py`) and
  the app's metrics port, with the pod's environment and state volume (`podspec.py`); a claim maps to
  `<root>/claims/<namespace>/<claim>`, which outlives pods, an emptyDir to `<root>/pods/<uid>`, which
  does not;
- reports `status.podIP`, the phase and the Ready condition (ready once the metrics endpoint reports the
  generation the pod applied: its client follows the assignment)
  through the status subresource;
- restarts a crashed worker in the same pod (restartPolicy Always or OnFailure), or fails the pod (Never);
- on deletion, stops the worker (SIGTERM, then SIGKILL after the grace period) and only then releases its
  finalizer and deletes the pod with no grace period (as a kubelet ends a graceful deletion: a real API
  server keeps a deleted pod bound to a node until then), so that the pod exists, terminating, for as long
  as its worker may still process (the emulator itself deletes at once);
- writes an `exited` record for every worker it has seen dead, so the record file bounds what it did.
- for chaos tests, loses a whole zone (its workers killed, none started there, their volumes kept) until it
  is restored, and freezes a worker (SIGSTOP: its metrics hang and it processes nothing) until thawed.

Workers get this process's pid and exit when it is gone, and `close()` stops every one: no orphans.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import shutil
import signal
import subprocess
import sys
import threading
import time
import urllib.request
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import kubernetes

from smoothscale.client import contract
from smoothscale.client.follow import Body, Follower, short_error

from . import environment as env
from .addresses import LoopbackAddresses
from .podspec import (
    AppSettings,
    app_settings,
    container_env,
    grace_seconds,
    restarts_after,
    state_volume,
)
from .records import RecordWriter
from .scheduling import choose_zone, node_body, node_name

log = logging.getLogger(__name__)

FINALIZER = "sandbox.smoothscale.io/kubelet"
"""Held on every pod the stand-in runs, until its worker is dead (see the module docstring)."""
HOST_IP = "127.0.0.1"
DEFAULT_ZONES = ("zone-a", "zone-b", "zone-c")


def _now() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


@dataclass
class _Worker:
    """The worker process of one pod (its one container), and what was last reported about it."""

    uid: str
    namespace: str
    pod: str
    container: str
    image: str
    ip: str
    settings: AppSettings
    state_dir: Path
    claim: str | None
    env: dict[str, str]
    pod_body: Body
    """The pod as it was when its worker started (its restart policy and grace period)."""
    process: subprocess.Popen[bytes] | None = None
    started_at: str = ""
    restarts: int = 0
    ready: bool = False
    ready_since: str = ""
    exit_code: int | None = None
    restart_at: float | None = None
    """When (monotonic) a crashed worker is started again; None while it runs or when it never will."""
    reported: dict[str, Any] | None = None

    @property
    def running(self) -> bool:
        return self.process is not None and self.process.poll() is None

    @property
    def finished(self) -> bool:
        """Exited and never to be restarted: the pod's phase is final."""
        return self.process is None and self.restart_at is None and self.exit_code is not None


@dataclass
class _Cache:
    """The latest version of every object of one kind, kept by a `Follower`."""

    objects: dict[str, Body] = field(default_factory=dict)
    synced: bool = False
    lock: threading.Lock = field(default_factory=threading.Lock)

    def replace(self, items: list[Body]) -> None:
        with self.lock:
            self.objects = {item["metadata"]["uid"]: item for item in items}
            self.synced = True

    def update(self, kind: str, body: Body) -> None:
        with self.lock:
            if kind == "DELETED":
                self.objects.pop(body["metadata"]["uid"], None)
            else:
                self.objects[body["metadata"]["uid"]] = body

    def snapshot(self) -> dict[str, Body]:
        with self.lock:
            return dict(self.objects)


class Kubelet:
    """See the module docstring. `with Kubelet(kubeconfig, root) as kubelet:`, or `start()` / `close()`.

    `worker_env` sets defaults for every worker (rates, for instance); a pod's own environment overrides them,
    and what the stand-in must decide (pod IP, port, state directory, kubeconfig, changelog epoch) overrides
    both. `namespace=None` runs the pods of every namespace.
    """

    def __init__(
        self,
        kubeconfig: Path,
        root: Path,
        *,
        zones: Sequence[str] = DEFAULT_ZONES,
        namespace: str | None = None,
        record_file: Path | None = None,
        worker_env: Mapping[str, str] | None = None,
        first_address: str = "127.0.0.2",
        changelog_epoch: float | None = None,
        resync_seconds: float = 0.2,
        max_grace_seconds: float = 5.0,
        restart_backoff_seconds: float = 0.5,
    ) -> None:
        self.kubeconfig = kubeconfig
        self.root = root
        self.zones = tuple(zones)
        self.namespace = namespace
        self.record_file = record_file
        self.changelog_epoch = time.time() if changelog_epoch is None else changelog_epoch
        self._worker_env = dict(worker_env or {})
        self._addresses = LoopbackAddresses(first_address)
        self._resync_seconds = resync_seconds
        self._max_grace = max_grace_seconds
        self._backoff = restart_backoff_seconds
        self._records = RecordWriter(record_file, "kubelet")
        self._api = kubernetes.config.new_client_from_config(config_file=str(kubeconfig))
        self._core = kubernetes.client.CoreV1Api(self._api)
        self._pods = _Cache()
        self._claims = _Cache()
        self._workers: dict[str, _Worker] = {}
        self._stopping: list[threading.Thread] = []
        self._terminating: set[str] = set()
        self._down: set[str] = set()
        """Zones lost (`lose_zone`): no worker runs there until `restore_zone`."""
        self._binding: dict[str, str] = {}
        """Pods bound (uid -> zone) whose binding the pod cache has not shown yet."""
        """Pods whose worker is being stopped: their finalizer goes when the worker has."""
        self._lock = threading.RLock()
        self._wake = threading.Event()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="sandbox-kubelet", daemon=True)

    # -- life cycle ----------------------------------------------------------------------------------------

    def __enter__(self) -> Kubelet:
        self.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def start(self) -> None:
        (self.root / "logs").mkdir(parents=True, exist_ok=True)
        for zone in self.zones:
            self._create_node(zone)
        core = self._core
        pods = (
            (core.list_namespaced_pod, self.namespace)
            if self.namespace
            else (core.list_pod_for_all_namespaces,)
        )
        claims = (
            (core.list_namespaced_persistent_volume_claim, self.namespace)
            if self.namespace
            else (core.list_persistent_volume_claim_for_all_namespaces,)
        )
        for cache, (function, *args), name in ((self._pods, pods, "pods"), (self._claims, claims, "claims")):
            Follower(
                function,
                *args,
                on_list=self._listed(cache),
                on_event=self._changed(cache),
                stop=self._stop,
                name=name,
            ).start()
        self._thread.start()

    def close(self) -> None:
        """Stop the loop, every worker (SIGTERM, then SIGKILL), and release the pods' finalizers."""
        self._stop.set()
        self._wake.set()
        if self._thread.is_alive():
            self._thread.join(timeout=10)
        with self._lock:
            workers = list(self._workers.values())
            self._workers.clear()
        for worker in workers:
            if worker.process is not None:
                with contextlib.suppress(ProcessLookupError):
                    worker.process.send_signal(signal.SIGTERM)
        for worker in workers:
            self._reap(worker, grace=self._max_grace)
        for thread in self._stopping:
            thread.join(timeout=self._max_grace + 5)
        for pod in self._pods.snapshot().values():
            if FINALIZER in (pod["metadata"].get("finalizers") or []):
                self._release_finalizer(pod["metadata"]["namespace"], pod["metadata"]["name"])
        self._records.close()
        self._api.close()

    # -- what tests and the demo ask of it ------------------------------------------------------------------

    def crash(
        self, pod: str, namespace: str = "default", *, lose_volume: bool = False, fail: bool = False
    ) -> int:
        """Kill the pod's worker (SIGKILL) and return its pid. With `lose_volume`, its state directory is
        wiped too (a disk lost with the process); with `fail`, the pod ends Failed instead of restarting."""
        with self._lock:
            worker = self._worker_of(namespace, pod)
            if worker is None or worker.process is None:
                raise LookupError(f"no running worker for pod {namespace}/{pod}")
            pid = worker.process.pid
            worker.process.kill()
            self._reap(worker, grace=0)
            if lose_volume:
                shutil.rmtree(worker.state_dir, ignore_errors=True)
            if fail:
                worker.exit_code = 137  # as a kubelet reports a SIGKILLed container
            else:
                worker.restart_at = time.monotonic() + self._backoff
        self._wake.set()
        return pid

    def lose_zone(self, zone: str) -> list[str]:
        """A zone outage: kill every worker in `zone` (SIGKILL) and start none there until `restore_zone`;
        the pods and their volumes stay, as with a node cut off and back. The pods whose workers died."""
        with self._lock:
            self._down.add(zone)
            lost = [w for w in self._workers.values() if self._zone_of(w.pod_body) == zone]
            for worker in lost:
                if worker.process is not None:
                    worker.process.kill()
                    self._reap(worker, grace=0)
                    worker.restart_at = time.monotonic()  # again as soon as the zone is back
        return [worker.pod for worker in lost]

    def restore_zone(self, zone: str) -> None:
        with self._lock:
            self._down.discard(zone)
        self._wake.set()

    def freeze(self, pod: str, namespace: str = "default", *, frozen: bool = True) -> None:
        """SIGSTOP (or, with `frozen=False`, SIGCONT) the pod's worker: a process stalled, e.g. by a long GC
        pause or a saturated node, whose metrics endpoint hangs and whose tasks stand still."""
        with self._lock:
            worker = self._worker_of(namespace, pod)
            if worker is None or worker.process is None:
                return
            with contextlib.suppress(ProcessLookupError):
                worker.process.send_signal(signal.SIGSTOP if frozen else signal.SIGCONT)

    def _zone_of(self, pod: Body) -> str | None:
        node = (pod.get("spec") or {}).get("nodeName")
        return next((zone for zone in self.zones if node_name(zone) == node), None)

    def worker_pids(self) -> dict[str, int]:
        """`namespace/pod` -> pid of its running worker."""
        with self._lock:
            return {
                f"{w.namespace}/{w.pod}": w.process.pid
                for w in self._workers.values()
                if w.process is not None and w.running
            }

    def pod_ip(self, pod: str, namespace: str = "default") -> str | None:
        with self._lock:
            worker = self._worker_of(namespace, pod)
            return None if worker is None else worker.ip

    def claim_dir(self, claim: str, namespace: str = "default") -> Path:
        """Where a PersistentVolumeClaim's data lives: it survives every pod that mounts it."""
        return self.root / "claims" / namespace / claim

    def _worker_of(self, namespace: str, pod: str) -> _Worker | None:
        return next((w for w in self._workers.values() if (w.namespace, w.pod) == (namespace, pod)), None)

    # -- the loop ------------------------------------------------------------------------------------------

    def _listed(self, cache: _Cache) -> Any:
        def on_list(items: list[Body]) -> None:
            cache.replace(items)
            self._wake.set()

        return on_list

    def _changed(self, cache: _Cache) -> Any:
        def on_event(kind: str, body: Body) -> None:
            cache.update(kind, body)
            self._wake.set()

        return on_event

    def _loop(self) -> None:
        while not self._stop.is_set():
            self._wake.wait(self._resync_seconds)
            self._wake.clear()
            if self._stop.is_set() or not self._pods.synced:
                continue
            try:
                with self._lock:
                    self._reconcile()
            except Exception as error:  # the API may fail for a while (fault injection): try again
                log.warning("kubelet pass failed, retrying: %s", short_error(error))

    def _reconcile(self) -> None:
        pods = self._pods.snapshot()
        self._binding = {
            uid: zone
            for uid, zone in self._binding.items()
            if uid in pods and not (pods[uid].get("spec") or {}).get("nodeName")
        }
        load = self._zone_load(pods)
        for uid in list(self._workers):
            pod = pods.get(uid)
            if pod is None or pod["metadata"].get("deletionTimestamp"):
                self._terminate(self._workers.pop(uid))
        ours = {node_name(zone) for zone in self.zones}
        for uid, pod in pods.items():
            node = (pod.get("spec") or {}).get("nodeName")
            if pod["metadata"].get("deletionTimestamp"):
                releasable = uid not in self._workers and uid not in self._terminating
                if releasable and FINALIZER in (pod["metadata"].get("finalizers") or []):
                    self._release_finalizer(pod["metadata"]["namespace"], pod["metadata"]["name"])
            elif uid in self._binding:
                continue  # bound, but the cache has not seen it yet: never bind a pod twice
            elif not node:
                self._bind(pod, load)
            elif node in ours:
                worker = self._workers.get(uid)
                if self._zone_of(pod) in self._down:
                    continue  # nothing runs in a lost zone
                if worker is None:
                    self._start_pod(pod)
                else:
                    self._check(worker)
        self._collect_claims()

    # -- scheduling ------------------------------------------------------------------------------------------

    def _create_node(self, zone: str) -> None:
        name = node_name(zone)
        try:
            metadata = kubernetes.client.V1ObjectMeta(**node_body(zone)["metadata"])
            self._core.create_node(kubernetes.client.V1Node(metadata=metadata))
        except kubernetes.client.ApiException as error:
            if error.status != 409:
                raise
        status = {
            "conditions": [
                {"type": "Ready", "status": "True", "reason": "KubeletReady", "lastTransitionTime": _now()}
            ],
            "addresses": [{"type": "InternalIP", "address": HOST_IP}, {"type": "Hostname", "address": name}],
        }
        self._core.patch_node_status(name, {"status": status})

    def _zone_load(self, pods: Mapping[str, Body]) -> dict[str, int]:
        """Pods per zone: those bound to its node and not being deleted, and those just bound there."""
        load = dict.fromkeys(self.zones, 0)
        zone_of = {node_name(zone): zone for zone in self.zones}
        for pod in pods.values():
            zone = zone_of.get((pod.get("spec") or {}).get("nodeName") or "")
            if zone is not None and not pod["metadata"].get("deletionTimestamp"):
                load[zone] += 1
        for zone in self._binding.values():
            load[zone] += 1
        return load

    def _bind(self, pod: Body, load: dict[str, int]) -> None:
        """Bind the pod to the node of the least loaded zone it accepts; `load` counts it there from now."""
        up = [zone for zone in self.zones if zone not in self._down]
        zone = choose_zone(pod.get("spec") or {}, up, load)
        metadata = pod["metadata"]
        if zone is None:
            log.warning(
                "pod %s/%s accepts none of the zones %s: Pending",
                metadata["namespace"],
                metadata["name"],
                self.zones,
            )
            return
        # The finalizer first, so that no pod runs without it; then the binding, as a scheduler binds: a
        # pod's spec.nodeName cannot be patched (the API server refuses to change a pod's spec).
        finalizers = [*(metadata.get("finalizers") or []), FINALIZER]
        self._core.patch_namespaced_pod(
            metadata["name"], metadata["namespace"], {"metadata": {"finalizers": finalizers}}
        )
        binding = kubernetes.client.V1Binding(
            metadata=kubernetes.client.V1ObjectMeta(name=metadata["name"]),
            target=kubernetes.client.V1ObjectReference(api_version="v1", kind="Node", name=node_name(zone)),
        )
        # Not deserialized: the client's V1Binding model cannot read the Status the server answers with.
        self._core.create_namespaced_pod_binding(
            metadata["name"], metadata["namespace"], binding, _preload_content=False
        )
        self._binding[metadata["uid"]] = zone
        load[zone] += 1
        log.info("bound pod %s/%s to %s", metadata["namespace"], metadata["name"], node_name(zone))

    # -- running workers -------------------------------------------------------------------------------------

    def _start_pod(self, pod: Body) -> None:
        metadata, spec = pod["metadata"], pod.get("spec") or {}
        namespace, name = metadata["namespace"], metadata["name"]
        if (pod.get("status") or {}).get("phase") in ("Succeeded", "Failed"):
            return  # a finished pod is never started again
        volume = state_volume(pod)
        if volume.claim is not None and not self._claim_ready(namespace, volume.claim):
            return  # Pending until its claim exists, as with a real volume binder
        settings = app_settings(self._streamsapp(namespace, metadata.get("labels") or {}))
        ip = self._addresses.allocate(settings.metrics_port)
        state_dir = (
            self.claim_dir(volume.claim, namespace)
            if volume.claim is not None
            else self.root / "pods" / metadata["uid"] / contract.STATE_VOLUME
        )
        container = (spec.get("containers") or [{}])[0]
        worker = _Worker(
            uid=metadata["uid"],
            namespace=namespace,
            pod=name,
            container=str(container.get("name") or "app"),
            image=str(container.get("image") or ""),
            ip=ip,
            settings=settings,
            state_dir=state_dir,
            claim=volume.claim,
            env=self._environment(pod, ip, settings, state_dir),
            pod_body=pod,
        )
        self._workers[worker.uid] = worker
        self._spawn(worker)

    def _environment(self, pod: Body, ip: str, settings: AppSettings, state_dir: Path) -> dict[str, str]:
        metadata = pod["metadata"]
        variables = {**os.environ, **self._worker_env, **container_env(pod, ip)}
        variables.setdefault(contract.POD_NAME_ENV, metadata["name"])
        variables.setdefault(contract.NAMESPACE_ENV, metadata["namespace"])
        variables.setdefault(
            contract.APP_ENV, (metadata.get("labels") or {}).get(contract.APP_LABEL, metadata["name"])
        )
        variables.update(
            {
                env.KUBECONFIG_ENV: str(self.kubeconfig),
                env.STATE_DIR_ENV: str(state_dir),
                env.METRICS_HOST_ENV: ip,
                env.METRICS_PORT_ENV: str(settings.metrics_port),
                env.CHANGELOG_EPOCH_ENV: repr(self.changelog_epoch),
                env.STATELESS_SUBTOPOLOGIES_ENV: ",".join(sorted(settings.stateless_subtopologies)),
                env.PARENT_PID_ENV: str(os.getpid()),
            }
        )
        if self.record_file is not None:
            variables[env.RECORD_FILE_ENV] = str(self.record_file)
        return variables

    def _spawn(self, worker: _Worker) -> None:
        worker.state_dir.mkdir(parents=True, exist_ok=True)
        log_path = self.root / "logs" / f"{worker.namespace}.{worker.pod}.{worker.uid[:8]}.log"
        with log_path.open("ab") as output:
            worker.process = subprocess.Popen(
                [sys.executable, "-P", "-m", "smoothscale.cli", "worker"],  # -P: see harness.py
                env=worker.env,
                stdin=subprocess.DEVNULL,
                stdout=output,
                stderr=subprocess.STDOUT,
                start_new_session=True,  # a terminal's Ctrl-C reaches the kubelet, which stops them in order
            )
        worker.started_at = _now()
        worker.ready = False
        worker.exit_code = None
        worker.restart_at = None
        log.info(
            "started worker of %s/%s (pid %d) on %s",
            worker.namespace,
            worker.pod,
            worker.process.pid,
            worker.ip,
        )
        self._report(worker)

    def _check(self, worker: _Worker) -> None:
        if worker.process is not None and worker.process.poll() is not None:
            self._reap(worker, grace=0)
            if restarts_after(worker.pod_body, worker.exit_code or 0):
                worker.restart_at = time.monotonic() + self._backoff
        if worker.process is None and worker.restart_at is not None and time.monotonic() >= worker.restart_at:
            worker.restarts += 1
            self._spawn(worker)
        if worker.running and not worker.ready and self._probe(worker):
            worker.ready = True
            worker.ready_since = _now()
        self._report(worker)

    def _probe(self, worker: _Worker) -> bool:
        url = f"http://{worker.ip}:{worker.settings.metrics_port}{worker.settings.metrics_path}"
        try:
            with urllib.request.urlopen(url, timeout=0.5) as response:
                # Ready once the pod follows its assignment (it then reports the generation it applied).
                return response.status == 200 and contract.GENERATION_METRIC.encode() in response.read()
        except OSError:
            return False

    def _reap(self, worker: _Worker, grace: float) -> None:
        """Wait up to `grace` seconds for the worker to exit, then kill it; record its exit. It has no
        process when this returns."""
        process = worker.process
        if process is None:
            return
        try:
            process.wait(timeout=grace)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
        worker.process = None
        worker.ready = False
        worker.exit_code = process.returncode
        self._records.write("exited", pod=worker.pod, pid=process.pid, code=process.returncode)
        log.info(
            "worker of %s/%s (pid %d) exited with %s",
            worker.namespace,
            worker.pod,
            process.pid,
            process.returncode,
        )

    def _terminate(self, worker: _Worker) -> None:
        """Stop a deleted pod's worker from a thread of its own (the grace period must not hold up the loop),
        then drop its emptyDir and release the pod."""
        grace = grace_seconds(worker.pod_body, self._max_grace)
        self._terminating.add(worker.uid)

        def stop() -> None:
            if worker.process is not None:
                with contextlib.suppress(ProcessLookupError):
                    worker.process.send_signal(signal.SIGTERM)
                self._reap(worker, grace)
            if worker.claim is None:
                shutil.rmtree(worker.state_dir.parent, ignore_errors=True)
            self._release_finalizer(worker.namespace, worker.pod)
            self._remove(worker)
            self._terminating.discard(worker.uid)
            log.info("stopped worker of %s/%s", worker.namespace, worker.pod)

        thread = threading.Thread(target=stop, name=f"stop-{worker.pod}", daemon=True)
        thread.start()
        self._stopping = [t for t in self._stopping if t.is_alive()] + [thread]

    def _remove(self, worker: _Worker) -> None:
        """End the graceful deletion, as a kubelet does once the pod's containers are gone: delete it again
        with no grace period (the API server keeps a deleted pod that is bound to a node until then)."""
        options = kubernetes.client.V1DeleteOptions(
            grace_period_seconds=0, preconditions=kubernetes.client.V1Preconditions(uid=worker.uid)
        )
        try:
            self._core.delete_namespaced_pod(worker.pod, worker.namespace, body=options)
        except kubernetes.client.ApiException as error:
            if error.status not in (404, 409):  # gone already, or a new pod of the same name
                log.warning(
                    "could not remove pod %s/%s: %s", worker.namespace, worker.pod, short_error(error)
                )

    def _release_finalizer(self, namespace: str, name: str) -> None:
        """Remove the stand-in's finalizer from the pod as it is now (others' finalizers stay)."""
        try:
            raw: Any = self._core.read_namespaced_pod(name, namespace, _preload_content=False)
            finalizers = list(json.loads(raw.data)["metadata"].get("finalizers") or [])
            if FINALIZER in finalizers:
                finalizers.remove(FINALIZER)
                self._core.patch_namespaced_pod(
                    name, namespace, {"metadata": {"finalizers": finalizers or None}}
                )
        except kubernetes.client.ApiException as error:
            if error.status != 404:
                log.warning("could not release pod %s/%s: %s", namespace, name, short_error(error))

    # -- status ----------------------------------------------------------------------------------------------

    def _report(self, worker: _Worker) -> None:
        status = _pod_status(worker)
        if status == worker.reported:
            return
        try:
            self._core.patch_namespaced_pod_status(worker.pod, worker.namespace, {"status": status})
        except kubernetes.client.ApiException as error:
            if error.status != 404:  # deleted meanwhile: the next pass terminates it
                raise
        worker.reported = status

    # -- volumes ---------------------------------------------------------------------------------------------

    def _claim_ready(self, namespace: str, claim: str) -> bool:
        """The claim exists; it is marked Bound (its directory is its volume) the first time a pod uses it."""
        found = next(
            (
                c
                for c in self._claims.snapshot().values()
                if (c["metadata"]["namespace"], c["metadata"]["name"]) == (namespace, claim)
            ),
            None,
        )
        if found is None:
            return False
        if (found.get("status") or {}).get("phase") != "Bound":
            requested = ((found.get("spec") or {}).get("resources") or {}).get("requests") or {}
            status = {
                "phase": "Bound",
                "accessModes": (found.get("spec") or {}).get("accessModes") or [],
                "capacity": requested,
            }
            self._core.patch_namespaced_persistent_volume_claim_status(claim, namespace, {"status": status})
        return True

    def _collect_claims(self) -> None:
        """Delete the directory of every claim that no longer exists and no worker uses."""
        if not self._claims.synced:
            return
        existing = {
            (c["metadata"]["namespace"], c["metadata"]["name"]) for c in self._claims.snapshot().values()
        }
        used = {(w.namespace, w.claim) for w in self._workers.values() if w.claim is not None}
        for directory in (self.root / "claims").glob("*/*"):
            key = (directory.parent.name, directory.name)
            if key not in existing and key not in used:
                shutil.rmtree(directory, ignore_errors=True)
                log.info("deleted the volume of claim %s/%s", *key)

    def _streamsapp(self, namespace: str, labels: Mapping[str, str]) -> Body | None:
        app = labels.get(contract.APP_LABEL)
        if not app:
            return None
        custom = kubernetes.client.CustomObjectsApi(self._api)
        try:
            found = custom.get_namespaced_custom_object(
                contract.GROUP, contract.VERSION, namespace, contract.PLURAL, app
            )
        except kubernetes.client.ApiException as error:
            if error.status == 404:
                return None
            raise
        return found if isinstance(found, Mapping) else None


def _condition(kind: str, true: bool, since: str) -> dict[str, str]:
    return {"type": kind, "status": "True" if true else "False", "lastTransitionTime": since}


def _pod_status(worker: _Worker) -> dict[str, Any]:
    """The pod status a kubelet would report for the worker's state."""
    if worker.running:
        state: dict[str, Any] = {"running": {"startedAt": worker.started_at}}
    elif worker.finished:
        state = {
            "terminated": {
                "exitCode": worker.exit_code,
                "reason": "Error" if worker.exit_code else "Completed",
            }
        }
    else:
        state = {
            "waiting": {
                "reason": "CrashLoopBackOff"
                if worker.restarts or worker.exit_code is not None
                else "ContainerCreating"
            }
        }
    since = worker.ready_since or worker.started_at
    return {
        "phase": ("Failed" if worker.exit_code else "Succeeded") if worker.finished else "Running",
        "hostIP": HOST_IP,
        "podIP": worker.ip,
        "podIPs": [{"ip": worker.ip}],
        "startTime": worker.started_at,
        "conditions": [
            _condition("PodScheduled", True, worker.started_at),
            _condition("Initialized", True, worker.started_at),
            _condition("ContainersReady", worker.ready, since),
            _condition("Ready", worker.ready, since),
        ],
        "containerStatuses": [
            {
                "name": worker.container,
                "image": worker.image,
                "imageID": "",
                "ready": worker.ready,
                "started": worker.running,
                "restartCount": worker.restarts,
                "state": state,
            }
        ],
    }
