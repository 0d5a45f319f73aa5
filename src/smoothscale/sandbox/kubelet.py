"""The kubelet stand-in: runs the pods of an API server (the emulator, or a real one) on this machine.

What it does, as a kubelet (and a scheduler, and a volume provisioner) would, whatever the pods run:

- creates one Node per zone (`sandbox-<zone>`, label `topology.kubernetes.io/zone`) and binds each new pod
  to the node of a zone it accepts (`scheduling.py`) through `pods/binding`, as a scheduler does, adding its
  finalizer first;
- starts each bound pod's container through a pod runtime (`podruntime.py`): a real process per pod
  (`processruntime.py`) or a pod faked in memory (`emulator/memoryruntime.py`); with the pod's state volume
  (`podspec.py`): a claim maps to `<root>/claims/<namespace>/<claim>`, which outlives pods, an emptyDir to
  `<root>/pods/<uid>`, which does not; a pod whose claim does not exist yet stays Pending;
- reports `status.podIP`, the phase and the Ready condition (the runtime's readiness probe) through the
  status subresource, and the annotations the runtime asks for;
- restarts a crashed container in the same pod (restartPolicy Always or OnFailure), or fails the pod (Never);
- on deletion, stops the container (SIGTERM, then SIGKILL after the pod's `terminationGracePeriodSeconds`, as
  a kubelet does: a Kafka Streams instance's exactly-once close must finish) and only then releases
  its finalizer and deletes the pod with no grace period (as a kubelet ends a graceful deletion: a real API
  server keeps a deleted pod bound to a node until then), so that the pod exists, terminating, for as long
  as its container may still process (the emulator itself deletes at once);
- writes an `exited` record for every container it has seen dead, and a `frozen` and a `thawed` one around
  a freeze, so the record file bounds what it did.
- for chaos tests, loses a whole zone (its containers killed, none started there, their volumes kept) until
  it is restored, and freezes a container (SIGSTOP: its metrics hang and it processes nothing) until thawed.

`close()` stops every container, then the runtime: no orphans.
"""

from __future__ import annotations

import base64
import json
import logging
import shutil
import signal
import threading
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import kubernetes

from smoothscale.client.follow import Body, Follower, short_error
from smoothscale.contract import shared_names as contract

from .podruntime import Container, Launch, PodRuntime
from .podspec import app_settings, env_sources, grace_seconds, restarts_after, state_volume, unresolved
from .records import RecordWriter
from .scheduling import choose_zone, node_body, node_name

log = logging.getLogger(__name__)

FINALIZER = "sandbox.smoothscale.io/kubelet"
"""Held on every pod the stand-in runs, until its container is dead (see the module docstring)."""
HOST_IP = "127.0.0.1"
DEFAULT_ZONES = ("zone-a", "zone-b", "zone-c")


def _now() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


@dataclass
class _Pod:
    """One pod the stand-in runs: its container (one per pod), and what was last reported about it."""

    uid: str
    namespace: str
    name: str
    launch: Launch
    claim: str | None
    container: Container | None = None
    started_at: str = ""
    restarts: int = 0
    ready: bool = False
    ready_since: str = ""
    exit_code: int | None = None
    restart_at: float | None = None
    """When (monotonic) a crashed container is started again; None while it runs or when it never will."""
    reported: dict[str, Any] | None = None
    annotated: Mapping[str, str] = field(default_factory=dict)

    @property
    def running(self) -> bool:
        return self.container is not None and self.container.poll() is None

    @property
    def finished(self) -> bool:
        """Exited and never to be restarted: the pod's phase is final."""
        return self.container is None and self.restart_at is None and self.exit_code is not None


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


def log_pod(log: Path) -> str:
    """The pod whose container wrote `log`, a file the kubelet keeps under `<root>/logs/` as
    `<namespace>.<pod>.<uid>.log` (one per pod, each restart of its process appended)."""
    return log.name.split(".", 1)[1].rsplit(".", 2)[0]


class Kubelet:
    """See the module docstring. `with Kubelet(kubeconfig, root, runtime) as kubelet:`, or `start()` /
    `close()`. `namespace=None` runs the pods of every namespace. `max_grace_seconds` caps every pod's grace
    period (None, the default: each pod's own, as a kubelet honours it); only a fast test whose pods may
    ignore SIGTERM has a use for it."""

    def __init__(
        self,
        kubeconfig: Path,
        root: Path,
        runtime: PodRuntime,
        *,
        zones: Sequence[str] = DEFAULT_ZONES,
        namespace: str | None = None,
        record_file: Path | None = None,
        resync_seconds: float = 0.2,
        max_grace_seconds: float | None = None,
        restart_backoff_seconds: float = 0.5,
    ) -> None:
        self.kubeconfig = kubeconfig
        self.root = root
        self.runtime = runtime
        self.zones = tuple(zones)
        self.namespace = namespace
        self._resync_seconds = resync_seconds
        self._max_grace = max_grace_seconds
        self._backoff = restart_backoff_seconds
        self._records = RecordWriter(record_file, "kubelet")
        self._api = kubernetes.config.new_client_from_config(config_file=str(kubeconfig))
        self._core = kubernetes.client.CoreV1Api(self._api)
        self._pods = _Cache()
        self._claims = _Cache()
        self._running: dict[str, _Pod] = {}
        self._stopping: list[tuple[threading.Thread, float]] = []
        """The threads stopping deleted pods' containers, each with its pod's grace period."""
        self._terminating: set[str] = set()
        """Pods whose container is being stopped: their finalizer goes when the container has."""
        self._removed: set[str] = set()
        """Deleted pods whose final DELETE the API server took: it is not sent again, even while another's
        finalizer keeps the pod listed."""
        self._down: set[str] = set()
        """Zones lost (`lose_zone`): no container runs there until `restore_zone`."""
        self._binding: dict[str, str] = {}
        self._waiting: dict[str, list[str]] = {}
        """What each pod's container waits for (ConfigMaps, Secrets), as last logged."""
        """Pods bound (uid -> zone) whose binding the pod cache has not shown yet."""
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
        self.runtime.open()
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
        """Stop the loop, every container (SIGTERM, then SIGKILL), release the pods' finalizers, then close
        the runtime."""
        self._stop.set()
        self._wake.set()
        if self._thread.is_alive():
            self._thread.join(timeout=10)
        with self._lock:
            pods = list(self._running.values())
            self._running.clear()
        for pod in pods:
            if pod.container is not None:
                pod.container.send_signal(signal.SIGTERM)
        for pod in pods:
            self._reap(pod, grace=grace_seconds(pod.launch.pod, self._max_grace))
        for thread, grace in self._stopping:
            thread.join(timeout=grace + 5)
        for body in self._pods.snapshot().values():
            if FINALIZER in (body["metadata"].get("finalizers") or []):
                self._release_finalizer(body["metadata"]["namespace"], body["metadata"]["name"])
        self.runtime.close()
        self._records.close()
        self._api.close()

    # -- what tests and the demo ask of it ------------------------------------------------------------------

    def crash(
        self, pod: str, namespace: str = "default", *, lose_volume: bool = False, fail: bool = False
    ) -> int:
        """Kill the pod's container (SIGKILL) and return its id. With `lose_volume`, its state directory is
        wiped too (a disk lost with the process); with `fail`, the pod ends Failed instead of restarting."""
        with self._lock:
            found = self._pod(namespace, pod)
            if found is None or found.container is None:
                raise LookupError(f"no running container for pod {namespace}/{pod}")
            container_id = found.container.id
            found.container.send_signal(signal.SIGKILL)
            self._reap(found, grace=0)
            if lose_volume:
                shutil.rmtree(found.launch.state_dir, ignore_errors=True)
            if fail:
                found.exit_code = 137  # as a kubelet reports a SIGKILLed container
            else:
                found.restart_at = time.monotonic() + self._backoff
        self._wake.set()
        return container_id

    def lose_zone(self, zone: str) -> list[str]:
        """A zone outage: kill every container in `zone` (SIGKILL) and start none there until `restore_zone`;
        the pods and their volumes stay, as with a node cut off and back. The pods whose containers died."""
        with self._lock:
            self._down.add(zone)
            lost = [p for p in self._running.values() if self._zone_of(p.launch.pod) == zone]
            for pod in lost:
                if pod.container is not None:
                    pod.container.send_signal(signal.SIGKILL)
                    self._reap(pod, grace=0)
                    pod.restart_at = time.monotonic()  # again as soon as the zone is back
        return [pod.name for pod in lost]

    def restore_zone(self, zone: str) -> None:
        with self._lock:
            self._down.discard(zone)
        self._wake.set()

    def freeze(self, pod: str, namespace: str = "default", *, frozen: bool = True) -> None:
        """SIGSTOP (or, with `frozen=False`, SIGCONT) the pod's container: a process stalled, e.g. by a long
        GC pause or a saturated node, whose metrics endpoint hangs and whose tasks stand still. Recorded
        (`frozen` once the process is stopped, `thawed` before it goes on), as its exit is: a stopped process
        logs nothing, so its own log cannot tell when it stopped processing."""
        with self._lock:
            found = self._pod(namespace, pod)
            if found is not None and found.container is not None:
                if frozen:
                    found.container.send_signal(signal.SIGSTOP)
                    self._records.write("frozen", pod=found.name, pid=found.container.id)
                else:
                    self._records.write("thawed", pod=found.name, pid=found.container.id)
                    found.container.send_signal(signal.SIGCONT)

    def cut_from_operator(self, pod: str, namespace: str = "default", *, cut: bool = True) -> None:
        """Close the sample worker's metrics endpoint (SIGUSR1), or open it again (SIGUSR2, `cut=False`):
        the pod runs and reaches the API server, but the operator cannot scrape it, as across a network
        partition between the two. For the sample worker only (`smoothscale worker` handles both signals)."""
        with self._lock:
            found = self._pod(namespace, pod)
            if found is not None and found.container is not None:
                found.container.send_signal(signal.SIGUSR1 if cut else signal.SIGUSR2)

    def _zone_of(self, pod: Body) -> str | None:
        node = (pod.get("spec") or {}).get("nodeName")
        return next((zone for zone in self.zones if node_name(zone) == node), None)

    def worker_pids(self) -> dict[str, int]:
        """`namespace/pod` -> id (a process runtime's pid) of its running container."""
        with self._lock:
            return {
                f"{p.namespace}/{p.name}": p.container.id
                for p in self._running.values()
                if p.container is not None and p.running
            }

    def pod_ip(self, pod: str, namespace: str = "default") -> str | None:
        with self._lock:
            found = self._pod(namespace, pod)
            return None if found is None else found.launch.ip

    def log_file(self, pod: str, namespace: str = "default") -> Path | None:
        """Where the running pod's container writes its output (every restart appends to it)."""
        with self._lock:
            found = self._pod(namespace, pod)
            return None if found is None else found.launch.log

    def claim_dir(self, claim: str, namespace: str = "default") -> Path:
        """Where a PersistentVolumeClaim's data lives: it survives every pod that mounts it."""
        return self.root / "claims" / namespace / claim

    def _pod(self, namespace: str, name: str) -> _Pod | None:
        return next((p for p in self._running.values() if (p.namespace, p.name) == (namespace, name)), None)

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
        self._removed &= set(pods)
        self._binding = {
            uid: zone
            for uid, zone in self._binding.items()
            if uid in pods and not (pods[uid].get("spec") or {}).get("nodeName")
        }
        load = self._zone_load(pods)
        self._waiting = {uid: missing for uid, missing in self._waiting.items() if uid in pods}
        for uid in list(self._running):
            pod = pods.get(uid)
            if pod is None or pod["metadata"].get("deletionTimestamp"):
                self._terminate(self._running.pop(uid))
        ours = {node_name(zone) for zone in self.zones}
        for uid, pod in pods.items():
            node = (pod.get("spec") or {}).get("nodeName")
            if pod["metadata"].get("deletionTimestamp"):
                if uid not in self._running and uid not in self._terminating:
                    self._end_deletion(pod, bound=node in ours and self._zone_of(pod) not in self._down)
            elif uid in self._binding:
                continue  # bound, but the cache has not seen it yet: never bind a pod twice
            elif not node:
                self._bind(pod, load)
            elif node in ours:
                running = self._running.get(uid)
                if self._zone_of(pod) in self._down:
                    continue  # nothing runs in a lost zone
                if running is None:
                    self._start_pod(pod)
                else:
                    self._check(running)
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

    # -- running containers ----------------------------------------------------------------------------------

    def _start_pod(self, body: Body) -> None:
        metadata = body["metadata"]
        namespace, name = metadata["namespace"], metadata["name"]
        if (body.get("status") or {}).get("phase") in ("Succeeded", "Failed"):
            return  # a finished pod is never started again
        volume = state_volume(body)
        if volume.claim is not None and not self._claim_ready(namespace, volume.claim):
            return  # Pending until its claim exists, as with a real volume binder
        sources = read_env_sources(self._core, body)
        if missing := unresolved(body, sources):
            # A kubelet's CreateContainerConfigError: the container starts once they exist.
            if self._waiting.get(metadata["uid"]) != missing:
                log.warning("pod %s/%s waits for %s", namespace, name, ", ".join(missing))
                self._waiting[metadata["uid"]] = missing
            return
        self._waiting.pop(metadata["uid"], None)
        settings = app_settings(self._streamsapp(namespace, metadata.get("labels") or {}))
        uid = metadata["uid"]
        state_dir = (
            self.claim_dir(volume.claim, namespace)
            if volume.claim is not None
            else self.root / "pods" / uid / contract.STATE_VOLUME
        )
        launch = Launch(
            pod=body,
            settings=settings,
            ip=self.runtime.address(body, settings),
            state_dir=state_dir,
            log=self.root / "logs" / f"{namespace}.{name}.{uid[:8]}.log",  # `log_pod` reads it back
            sources=sources,
        )
        pod = _Pod(uid=uid, namespace=namespace, name=name, launch=launch, claim=volume.claim)
        self._running[uid] = pod
        self._spawn(pod)

    def _spawn(self, pod: _Pod) -> None:
        pod.container = self.runtime.start(pod.launch)
        pod.started_at = _now()
        pod.ready = False
        pod.exit_code = None
        pod.restart_at = None
        log.info("started %s/%s (%d) on %s", pod.namespace, pod.name, pod.container.id, pod.launch.ip)
        self._annotate(pod)
        self._report(pod)

    def _check(self, pod: _Pod) -> None:
        if pod.container is not None and pod.container.poll() is not None:
            self._reap(pod, grace=0)
            if restarts_after(pod.launch.pod, pod.exit_code or 0):
                pod.restart_at = time.monotonic() + self._backoff
        if pod.container is None and pod.restart_at is not None and time.monotonic() >= pod.restart_at:
            pod.restarts += 1
            self._spawn(pod)
        ready = pod.container is not None and pod.running and pod.container.ready()
        if ready != pod.ready:
            pod.ready = ready
            pod.ready_since = _now()
        self._report(pod)

    def _reap(self, pod: _Pod, grace: float) -> None:
        """Wait up to `grace` seconds for the container to exit, then kill it; record its exit. The pod has
        no container when this returns."""
        container = pod.container
        if container is None:
            return
        code = container.wait(grace)
        if code is None:
            container.send_signal(signal.SIGKILL)
            code = container.wait(None)
        pod.container = None
        pod.ready = False
        pod.exit_code = code
        self._records.write("exited", pod=pod.name, pid=container.id, code=code)
        log.info("%s/%s (%d) exited with %s", pod.namespace, pod.name, container.id, code)

    def _terminate(self, pod: _Pod) -> None:
        """Stop a deleted pod's container from a thread of its own (the grace period must not hold up the
        loop), then drop its emptyDir and release the pod."""
        grace = grace_seconds(pod.launch.pod, self._max_grace)
        self._terminating.add(pod.uid)

        def stop() -> None:
            if pod.container is not None:
                pod.container.send_signal(signal.SIGTERM)
                self._reap(pod, grace)
            if pod.claim is None:
                shutil.rmtree(pod.launch.state_dir.parent, ignore_errors=True)
            self._release_finalizer(pod.namespace, pod.name)
            self._remove(pod.namespace, pod.name, pod.uid)
            self._terminating.discard(pod.uid)
            log.info("stopped %s/%s", pod.namespace, pod.name)

        thread = threading.Thread(target=stop, name=f"stop-{pod.name}", daemon=True)
        thread.start()
        self._stopping = [(t, g) for t, g in self._stopping if t.is_alive()] + [(thread, grace)]

    def _end_deletion(self, pod: Body, *, bound: bool) -> None:
        """A deleted pod whose container is gone, still listed: the release of its finalizer or its removal
        failed (the API erred), and a kubelet tries again at every pass until the pod is gone (`bound`: on a
        node of ours that is up; a lost node's pods stay until it is back)."""
        metadata = pod["metadata"]
        if FINALIZER in (metadata.get("finalizers") or []):
            self._release_finalizer(metadata["namespace"], metadata["name"])
        if bound and metadata["uid"] not in self._removed:
            self._remove(metadata["namespace"], metadata["name"], metadata["uid"])

    def _remove(self, namespace: str, name: str, uid: str) -> None:
        """End the graceful deletion, as a kubelet does once the pod's containers are gone: delete it again
        with no grace period (the API server keeps a deleted pod that is bound to a node until then)."""
        options = kubernetes.client.V1DeleteOptions(
            grace_period_seconds=0, preconditions=kubernetes.client.V1Preconditions(uid=uid)
        )
        try:
            self._core.delete_namespaced_pod(name, namespace, body=options)
        except kubernetes.client.ApiException as error:
            if error.status not in (404, 409):  # gone already, or a new pod of the same name
                log.warning("could not remove pod %s/%s: %s", namespace, name, short_error(error))
                return
        self._removed.add(uid)

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

    def _annotate(self, pod: _Pod) -> None:
        """Set the annotations the container asks for (a faked pod's metrics port), once per value."""
        wanted = dict(pod.container.annotations) if pod.container is not None else {}
        if not wanted or wanted == pod.annotated:
            return
        self._core.patch_namespaced_pod(pod.name, pod.namespace, {"metadata": {"annotations": wanted}})
        pod.annotated = wanted

    def _report(self, pod: _Pod) -> None:
        status = _pod_status(pod)
        if status == pod.reported:
            return
        try:
            self._core.patch_namespaced_pod_status(pod.name, pod.namespace, {"status": status})
        except kubernetes.client.ApiException as error:
            if error.status != 404:  # deleted meanwhile: the next pass terminates it
                raise
        pod.reported = status

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
        """Delete the directory of every claim that no longer exists and no running pod uses."""
        if not self._claims.synced:
            return
        existing = {
            (c["metadata"]["namespace"], c["metadata"]["name"]) for c in self._claims.snapshot().values()
        }
        used = {(p.namespace, p.claim) for p in self._running.values() if p.claim is not None}
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


def read_env_sources(core: kubernetes.client.CoreV1Api, pod: Body) -> dict[tuple[str, str], dict[str, str]]:
    """The data of the ConfigMaps and Secrets the pod's environment names (`podspec.env_sources`), those
    that exist (`podspec.Sources`); a Secret's values decoded."""
    namespace = pod["metadata"]["namespace"]
    found: dict[tuple[str, str], dict[str, str]] = {}
    for ref in env_sources(pod):
        if (ref.kind, ref.name) in found:
            continue
        secret = ref.kind == "Secret"
        read = core.read_namespaced_secret if secret else core.read_namespaced_config_map
        try:
            data = read(ref.name, namespace).data or {}
        except kubernetes.client.ApiException as error:
            if error.status == 404:
                continue
            raise
        found[ref.kind, ref.name] = {
            key: base64.b64decode(value).decode() if secret else str(value) for key, value in data.items()
        }
    return found


def _condition(kind: str, true: bool, since: str) -> dict[str, str]:
    return {"type": kind, "status": "True" if true else "False", "lastTransitionTime": since}


def _pod_status(pod: _Pod) -> dict[str, Any]:
    """The pod status a kubelet would report for the container's state."""
    if pod.running:
        state: dict[str, Any] = {"running": {"startedAt": pod.started_at}}
    elif pod.finished:
        state = {
            "terminated": {"exitCode": pod.exit_code, "reason": "Error" if pod.exit_code else "Completed"}
        }
    else:
        waiting = "CrashLoopBackOff" if pod.restarts or pod.exit_code is not None else "ContainerCreating"
        state = {"waiting": {"reason": waiting}}
    since = pod.ready_since or pod.started_at
    container = ((pod.launch.pod.get("spec") or {}).get("containers") or [{}])[0]
    ip = pod.launch.ip
    return {
        "phase": ("Failed" if pod.exit_code else "Succeeded") if pod.finished else "Running",
        "hostIP": HOST_IP,
        "podIP": ip,
        "podIPs": [{"ip": ip}],
        "startTime": pod.started_at,
        "conditions": [
            _condition("PodScheduled", True, pod.started_at),
            _condition("Initialized", True, pod.started_at),
            _condition("ContainersReady", pod.ready, since),
            _condition("Ready", pod.ready, since),
        ],
        "containerStatuses": [
            {
                "name": str(container.get("name") or "app"),
                "image": str(container.get("image") or ""),
                "imageID": "",
                "ready": pod.ready,
                "started": pod.running,
                "restartCount": pod.restarts,
                "state": state,
            }
        ],
    }
