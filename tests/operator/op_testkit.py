"""A fake kubelet and fake app pods for the operator's integration tests (a uniquely named module).

`FakeCluster` runs in a thread with its own event loop and plays what a cluster would do around the operator:

- it creates nodes in three zones, and "schedules" every pod the operator creates: node, IP (127.0.0.1),
  the metrics port annotation (`smoothscale.io/metrics-port`, one port per pod on loopback), phase Running
  and a Ready condition, all through the API (the status subresource for the status);
- it runs each pod's metrics endpoint (aiohttp) with Contract 3's metrics;
- each fake pod reads the assignment ConfigMap, applies the newest generation (unless held), and reports it;
  every task it holds (active, standby, warmup) catches up at `restore_rate` offsets per second;
- it records every generation a pod applied and checks, at each application, that no task is processed by
  two pods at once (`violations` must stay empty): the property the two-phase hand-over exists for.
"""

from __future__ import annotations

import asyncio
import base64
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import aiohttp
from aiohttp import web

from smoothscale.assignor.handover import Publication, decode_publication
from smoothscale.operator.pods import PodInfo

NAMESPACE = "default"
ZONES = ("zone-a", "zone-b", "zone-c")
MANAGED = "app.kubernetes.io/managed-by=smoothscale"
MERGE = {"Content-Type": "application/merge-patch+json"}
CHANGELOG = 100_000
SMOOTHSCALE = str(Path(sys.executable).with_name("smoothscale"))


@contextmanager
def operator_process(
    command: list[str], log: Path, env: Mapping[str, str] | None = None
) -> Iterator[subprocess.Popen[bytes]]:
    """The operator as a real process (output to `log`); killed on exit unless the caller stopped it."""
    with log.open("ab") as output:
        process = subprocess.Popen(command, stdout=output, stderr=subprocess.STDOUT, env=env)
    try:
        yield process
    finally:
        if process.poll() is None:
            process.kill()
        process.wait(timeout=10)


def streamsapp(
    name: str = "orders",
    replicas: int = 3,
    partitions: int = 6,
    *,
    standbys: int = 1,
    warmups: int = 4,
    scaling: dict[str, Any] | None = None,
    storage: bool = False,
    image: str = "example/orders:1",
    probing: str = "1m",
    port: int = 8080,
) -> dict[str, Any]:
    spec: dict[str, Any] = {
        "replicas": replicas,
        "template": {"spec": {"containers": [{"name": "app", "image": image}]}},
        "topology": {"subtopologies": [{"name": "0", "partitions": partitions, "inputTopics": ["in"]}]},
        "assignment": {
            "numStandbys": standbys,
            "acceptableRecoveryLag": 1000,
            "maxWarmupReplicas": warmups,
            "probingInterval": probing,
        },
        "scaling": scaling or {},
        "metrics": {"port": port},
    }
    if storage:
        spec["storage"] = {"size": "1Gi"}
    return {
        "apiVersion": "smoothscale.io/v1alpha1",
        "kind": "StreamsApp",
        "metadata": {"name": name, "namespace": NAMESPACE},
        "spec": spec,
    }


def pod_record(
    ordinal: int,
    *,
    app: str = "orders",
    revision: str = "r1",
    leaving: str | None = None,
    reason: str | None = None,
    ready: bool = True,
    phase: str = "Running",
    deleting: bool = False,
    node: str | None = "node-0",
) -> PodInfo:
    """A pod as the operator's index holds it, for the pure modules' tests."""
    return PodInfo(
        name=f"{app}-{ordinal}",
        uid=f"uid-{ordinal}",
        app=app,
        ordinal=ordinal,
        revision=revision,
        leaving=leaving,
        leaving_reason=reason,
        node=node,
        ip="10.0.0.1",
        metrics_port=None,
        phase=phase,
        ready=ready,
        deleting=deleting,
    )


def wait_for(check: Callable[[], Any], timeout: float = 20.0, interval: float = 0.1, what: str = "") -> Any:
    """Poll `check` until it returns something truthy; fail with `what` (and the last value) on timeout."""
    deadline = time.monotonic() + timeout
    last: Any = None
    while time.monotonic() < deadline:
        last = check()
        if last:
            return last
        time.sleep(interval)
    raise AssertionError(f"timed out after {timeout}s waiting for {what or check}: last value {last!r}")


@dataclass
class FakePod:
    name: str
    uid: str
    port: int = 0
    runner: web.AppRunner | None = None
    generation: int = 0
    active: set[str] = field(default_factory=set)
    standby: set[str] = field(default_factory=set)
    warmup: set[str] = field(default_factory=set)
    lags: dict[str, float] = field(default_factory=dict)
    mode: str = "ok"  # ok | down | garbage
    hold: bool = False  # stop applying new generations (a pod stuck in a long commit)

    def exposition(self) -> str:
        lines = ["# TYPE smoothscale_task_lag gauge"]
        lines += [f'smoothscale_task_lag{{task="{t}"}} {int(lag)}' for t, lag in sorted(self.lags.items())]
        lines += [
            f'smoothscale_task_changelog_end_offset{{task="{t}"}} {CHANGELOG}' for t in sorted(self.lags)
        ]
        lines.append(f"smoothscale_assignment_generation {self.generation}")
        return "\n".join(lines) + "\n"


class FakeCluster:
    """See the module docstring. Use as a context manager; tune `restore_rate` and pods' modes live."""

    def __init__(self, url: str, app: str = "orders", *, restore_rate: float = 400_000, tick: float = 0.05):
        self.url = url
        self.app = app
        self.restore_rate = restore_rate
        self.tick = tick
        self.pods: dict[str, FakePod] = {}
        self.kept_state: dict[str, dict[str, float]] = {}
        self.keep_state = False  # PVCs: a recreated pod finds its state again
        self.not_ready: set[str] = set()
        self.violations: list[str] = []
        self.generations_seen: list[int] = []
        self.lock = threading.Lock()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="fake-cluster", daemon=True)
        self._error: BaseException | None = None

    def __enter__(self) -> FakeCluster:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(timeout=10)
        if self._error is not None and exc[0] is None:
            raise self._error

    def drop_unheld_state(self) -> None:
        """Pods delete the state of tasks they no longer hold (Kafka Streams' state cleanup)."""
        with self.lock:
            for pod in self.pods.values():
                held = pod.active | pod.standby | pod.warmup
                pod.lags = {task: lag for task, lag in pod.lags.items() if task in held}

    def pod(self, name: str) -> FakePod:
        return wait_for(lambda: self.pods.get(name), what=f"fake pod {name}")

    # -- the loop ------------------------------------------------------------------------------------------

    def _run(self) -> None:
        try:
            asyncio.run(self._main())
        except BaseException as error:
            self._error = error

    async def _main(self) -> None:
        async with aiohttp.ClientSession(base_url=self.url) as api:
            for index, zone in enumerate(ZONES):
                body = {
                    "apiVersion": "v1",
                    "kind": "Node",
                    "metadata": {"name": f"node-{index}", "labels": {"topology.kubernetes.io/zone": zone}},
                }
                await api.post("/api/v1/nodes", json=body)
            last = time.monotonic()
            while not self._stop.is_set():
                await self._step(api, time.monotonic() - last)
                last = time.monotonic()
                await asyncio.sleep(self.tick)
            for pod in list(self.pods.values()):
                await self._stop_pod(pod)

    async def _step(self, api: aiohttp.ClientSession, elapsed: float) -> None:
        async with api.get(f"/api/v1/namespaces/{NAMESPACE}/pods", params={"labelSelector": MANAGED}) as r:
            items = (await r.json())["items"]
        seen = {}
        for item in items:
            name, uid = item["metadata"]["name"], item["metadata"]["uid"]
            seen[name] = uid
            pod = self.pods.get(name)
            if pod is not None and pod.uid != uid:
                await self._forget(pod)
                pod = None
            if pod is None:
                pod = await self._start_pod(api, item)
            await self._set_ready(api, item, name not in self.not_ready)
        for name in list(self.pods):
            if name not in seen:
                await self._forget(self.pods[name])
        publication = await self._publication(api)
        with self.lock:
            if publication is not None:
                self._apply(publication)
            self._restore(elapsed)

    async def _start_pod(self, api: aiohttp.ClientSession, item: dict[str, Any]) -> FakePod:
        name = item["metadata"]["name"]
        pod = FakePod(name=name, uid=item["metadata"]["uid"], lags=dict(self.kept_state.pop(name, {})))
        application = web.Application()

        async def metrics(_: web.Request) -> web.Response:
            return await self._serve(pod)

        application.router.add_get("/metrics", metrics)
        pod.runner = web.AppRunner(application, access_log=None)
        await pod.runner.setup()
        site = web.TCPSite(pod.runner, "127.0.0.1", 0)
        await site.start()
        pod.port = int(pod.runner.addresses[0][1])
        ordinal = int(name.rsplit("-", 1)[1])
        patch = {
            "metadata": {"annotations": {"smoothscale.io/metrics-port": str(pod.port)}},
            "spec": {"nodeName": f"node-{ordinal % len(ZONES)}"},
        }
        await api.patch(f"/api/v1/namespaces/{NAMESPACE}/pods/{name}", json=patch, headers=MERGE)
        self.pods[name] = pod
        return pod

    async def _set_ready(self, api: aiohttp.ClientSession, item: dict[str, Any], ready: bool) -> None:
        status = item.get("status") or {}
        is_ready = any(
            c.get("type") == "Ready" and c.get("status") == "True" for c in status.get("conditions") or []
        )
        if status.get("podIP") and is_ready == ready:
            return
        body = {
            "status": {
                "phase": "Running",
                "podIP": "127.0.0.1",
                "conditions": [{"type": "Ready", "status": "True" if ready else "False"}],
            }
        }
        name = item["metadata"]["name"]
        await api.patch(f"/api/v1/namespaces/{NAMESPACE}/pods/{name}/status", json=body, headers=MERGE)

    async def _forget(self, pod: FakePod) -> None:
        """The pod is gone: it processes nothing any more (its state survives only with storage)."""
        with self.lock:
            if self.keep_state:
                self.kept_state[pod.name] = dict(pod.lags)
            del self.pods[pod.name]
        await self._stop_pod(pod)

    async def _stop_pod(self, pod: FakePod) -> None:
        if pod.runner is not None:
            await pod.runner.cleanup()
            pod.runner = None

    async def _serve(self, pod: FakePod) -> web.Response:
        if pod.mode == "down":
            raise web.HTTPServiceUnavailable()
        if pod.mode == "garbage":
            return web.Response(text="<html>this is not prometheus {{{</html>")
        with self.lock:
            return web.Response(text=pod.exposition())

    async def _publication(self, api: aiohttp.ClientSession) -> Publication | None:
        path = f"/api/v1/namespaces/{NAMESPACE}/configmaps/{self.app}-assignment"
        async with api.get(path) as response:
            if response.status == 404:
                return None
            body = await response.json()
        return decode_publication(base64.b64decode(body["binaryData"]["assignment.json.gz"]))

    # -- the pods' behaviour -------------------------------------------------------------------------------

    def _apply(self, publication: Publication) -> None:
        if not self.generations_seen or self.generations_seen[-1] != publication.generation:
            self.generations_seen.append(publication.generation)
        for pod in self.pods.values():
            if pod.hold or pod.generation >= publication.generation:
                continue
            roles = publication.assignment.get(pod.name)
            active = set(roles.active) if roles else set()
            for task in active - pod.active:
                others = [p.name for p in self.pods.values() if p is not pod and task in p.active]
                if others:
                    self.violations.append(
                        f"generation {publication.generation}: {pod.name} starts {task} while {others} run it"
                    )
            pod.active = active
            pod.standby = set(roles.standby) if roles else set()
            pod.warmup = set(roles.warmup) if roles else set()
            for task in pod.active | pod.standby | pod.warmup:
                pod.lags.setdefault(task, CHANGELOG)
            pod.generation = publication.generation

    def _restore(self, elapsed: float) -> None:
        """Every task a pod holds catches up at `restore_rate`; an active one then keeps up (lag 0)."""
        for pod in self.pods.values():
            for task in pod.active | pod.standby | pod.warmup:
                pod.lags[task] = max(0.0, pod.lags.get(task, CHANGELOG) - self.restore_rate * elapsed)


class Kubectl:
    """What a person would look at with kubectl: the app, its pods, its ConfigMap, its events."""

    def __init__(self, client: Any) -> None:
        import kubernetes  # noqa: PLC0415

        self.core = kubernetes.client.CoreV1Api(client)
        self.custom = kubernetes.client.CustomObjectsApi(client)
        self.api_exception = kubernetes.client.ApiException

    def apply(self, body: dict[str, Any]) -> None:
        self.custom.create_namespaced_custom_object(
            "smoothscale.io", "v1alpha1", NAMESPACE, "streamsapps", body
        )

    def patch_app(self, name: str, patch: dict[str, Any]) -> None:
        self.custom.patch_namespaced_custom_object(
            "smoothscale.io", "v1alpha1", NAMESPACE, "streamsapps", name, patch
        )

    def app(self, name: str = "orders") -> dict[str, Any]:
        return dict(
            self.custom.get_namespaced_custom_object(
                "smoothscale.io", "v1alpha1", NAMESPACE, "streamsapps", name
            )
        )

    def status(self, name: str = "orders") -> dict[str, Any]:
        return dict(self.app(name).get("status") or {})

    def condition(self, kind: str, name: str = "orders") -> dict[str, Any]:
        return next((c for c in self.status(name).get("conditions", []) if c["type"] == kind), {})

    def pods(self, app: str = "orders") -> dict[str, Any]:
        items = self.core.list_namespaced_pod(NAMESPACE, label_selector=f"smoothscale.io/app={app}").items
        return {pod.metadata.name: pod for pod in items}

    def annotate(self, pod: str, annotations: dict[str, str | None]) -> None:
        self.core.patch_namespaced_pod(pod, NAMESPACE, {"metadata": {"annotations": annotations}})

    def delete_pod(self, pod: str) -> None:
        self.core.delete_namespaced_pod(pod, NAMESPACE)

    def publication(self, app: str = "orders") -> Publication | None:
        try:
            configmap = self.core.read_namespaced_config_map(f"{app}-assignment", NAMESPACE)
        except self.api_exception as error:
            if error.status == 404:
                return None
            raise
        raw = base64.b64decode(configmap.binary_data["assignment.json.gz"])
        publication = decode_publication(raw)
        assert configmap.data["generation"] == str(publication.generation)
        return publication

    def events(self, name: str = "orders") -> list[tuple[str, str, str]]:
        """(type, reason, message) of the app's events, oldest first."""
        items = self.core.list_namespaced_event(NAMESPACE).items
        ours = [e for e in items if e.involved_object.name == name and e.involved_object.kind == "StreamsApp"]
        return [(e.type, e.reason, e.message) for e in ours]

    def reasons(self, name: str = "orders") -> set[str]:
        return {reason for _, reason, _ in self.events(name)}


def actives(publication: Publication | None) -> dict[str, str]:
    """task -> pod of the published actives."""
    return publication.active_owner() if publication is not None else {}


def balanced(publication: Publication | None, pods: int, tasks: int) -> bool:
    """Every task active, on `pods` pods, none with more than one task above another."""
    if publication is None or publication.revoking:
        return False
    counts = [len(a.active) for a in publication.assignment.values()]
    counts += [0] * (pods - len(counts))
    return sum(counts) == tasks and len(counts) == pods and max(counts) - min(counts) <= 1
