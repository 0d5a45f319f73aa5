"""A kubelet stand-in without processes: the pods of the emulated cluster, faked in memory.

The sandbox's kubelet (`smoothscale.sandbox`) runs a real worker process per pod; this one runs none, so that
the operator's integration tests and its benchmark can have a thousand pods on a laptop. In a thread of its
own, it plays what a cluster does around the operator, through the API like a kubelet:

- it creates one node per zone and binds every pod the operator creates (through `pods/binding`) to the
  least loaded zone the pod accepts (the sandbox kubelet's scheduling, `smoothscale.sandbox.scheduling`),
  gives it an IP (127.0.0.1) and, because all pods share that IP, the metrics port annotation
  (`smoothscale.io/metrics-port`: one loopback port per pod), then reports it Running and Ready;
- it serves each pod's Contract 3 metrics from memory, with the processing rate in `process_rates` of each
  task the pod runs active;
- each pod reads its app's assignment ConfigMap, applies the newest generation unless `hold`, and reports
  it; every task a pod holds (active, standby, warmup) catches up at `restore_rate` offsets per second from
  `changelog` (or from the state it kept, with `keep_state`, when a pod comes back under its name);
- it checks, every time a pod applies a generation, that no task is processed by two pods at once, and
  records each violation (`violations` must stay empty: the two-phase hand-over's promise).
"""

from __future__ import annotations

import asyncio
import base64
import random
import threading
import time
from dataclasses import dataclass, field
from typing import Any

import aiohttp
from aiohttp import web

from smoothscale.assignor.handover import Publication, decode_publication
from smoothscale.client import contract
from smoothscale.operator.control import names
from smoothscale.sandbox.scheduling import choose_zone, node_body, node_name

ZONES = ("zone-a", "zone-b", "zone-c")
_MANAGED = f"{names.MANAGED_BY_LABEL}={names.MANAGED_BY}"
_MERGE = {"Content-Type": "application/merge-patch+json"}


@dataclass
class FakePod:
    name: str
    app: str
    uid: str
    port: int = 0
    runner: web.AppRunner | None = None
    generation: int = 0
    active: set[str] = field(default_factory=set)
    standby: set[str] = field(default_factory=set)
    warmup: set[str] = field(default_factory=set)
    lags: dict[str, float] = field(default_factory=dict)
    mode: str = "ok"
    """ok, down (HTTP 503) or garbage (not a Prometheus exposition)."""
    hold: bool = False
    """Stop applying new generations, like a pod stuck in a long commit."""
    zone: str | None = None
    """The zone of the node it is bound to (None: it accepts no zone and stays unbound)."""
    caught_up: dict[str, float] = field(default_factory=dict)
    """task -> the time its metrics first showed it within `catch_up_lag`, while a warmup or standby."""

    def held(self) -> set[str]:
        return self.active | self.standby | self.warmup

    def exposition(self, changelog: int, process_rates: dict[str, float]) -> str:
        lines = [f"# TYPE {contract.TASK_LAG_METRIC} gauge"]
        lines += [
            f'{contract.PROCESS_RATE_METRIC}{{task="{t}"}} {process_rates[t]}'
            for t in sorted(self.active)
            if t in process_rates
        ]
        lines += [
            f'{contract.TASK_LAG_METRIC}{{task="{t}"}} {int(lag)}' for t, lag in sorted(self.lags.items())
        ]
        lines += [
            f'{contract.CHANGELOG_END_OFFSET_METRIC}{{task="{t}"}} {changelog}' for t in sorted(self.lags)
        ]
        lines.append(f"{contract.GENERATION_METRIC} {self.generation}")
        return "\n".join(lines) + "\n"


class FakeKubelet:
    """See the module docstring. A context manager; pods' `mode` and `hold`, and the rates, change live."""

    def __init__(
        self,
        url: str,
        *,
        namespace: str = "default",
        restore_rate: float = 400_000,
        changelog: int = 100_000,
        catch_up_lag: int = 1_000,
        restore_jitter: float = 0.0,
        seed: int = 0,
        tick: float = 0.05,
    ) -> None:
        self.url = url
        self.namespace = namespace
        self.restore_rate = restore_rate
        self.changelog = changelog
        self.catch_up_lag = catch_up_lag
        self.restore_jitter = restore_jitter
        self.tick = tick
        self._random = random.Random(seed)
        self.keep_state = False
        self.process_rates: dict[str, float] = {}
        """task -> records/s its active pod reports (`smoothscale_task_process_rate`); others report none."""
        self.not_ready: set[str] = set()
        self.pods: dict[str, FakePod] = {}
        self.violations: list[str] = []
        self.seen: dict[str, list[tuple[int, float]]] = {}
        """app -> (generation, the time it was first seen) of every generation the pods saw."""
        self.lock = threading.Lock()
        self._kept: dict[str, dict[str, float]] = {}
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="fake-kubelet", daemon=True)
        self._error: BaseException | None = None

    def __enter__(self) -> FakeKubelet:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(timeout=10)
        if self._error is not None and exc[0] is None:
            raise self._error

    def pod(self, name: str, timeout: float = 20.0) -> FakePod:
        """The fake pod of that name, once the kubelet has started it."""
        deadline = time.monotonic() + timeout
        while (pod := self.pods.get(name)) is None:
            if time.monotonic() > deadline:
                raise TimeoutError(f"no pod {name} after {timeout}s")
            time.sleep(0.02)
        return pod

    def generations(self, app: str) -> list[int]:
        return [generation for generation, _ in self.seen.get(app, [])]

    def drop_unheld_state(self) -> None:
        """Pods delete the state of tasks they no longer hold (Kafka Streams' state cleanup)."""
        with self.lock:
            for pod in self.pods.values():
                pod.lags = {task: lag for task, lag in pod.lags.items() if task in pod.held()}

    # -- the loop ------------------------------------------------------------------------------------------

    def _run(self) -> None:
        try:
            asyncio.run(self._main())
        except BaseException as error:
            self._error = error

    async def _main(self) -> None:
        async with aiohttp.ClientSession(base_url=self.url) as api:
            for zone in ZONES:
                await api.post("/api/v1/nodes", json=node_body(zone))
            last = time.monotonic()
            while not self._stop.is_set():
                now = time.monotonic()
                await self._step(api, now - last)
                last = now
                await asyncio.sleep(self.tick)
            for pod in list(self.pods.values()):
                await self._stop_pod(pod)

    async def _step(self, api: aiohttp.ClientSession, elapsed: float) -> None:
        base = f"/api/v1/namespaces/{self.namespace}"
        async with api.get(f"{base}/pods", params={"labelSelector": _MANAGED}) as response:
            items = (await response.json())["items"]
        present = {}
        for item in items:
            name, uid = item["metadata"]["name"], item["metadata"]["uid"]
            present[name] = uid
            known = self.pods.get(name)
            if known is not None and known.uid != uid:
                await self._forget(known)
                known = None
            if known is None:
                await self._start_pod(api, item)
            await self._report_status(api, item, name not in self.not_ready)
        for name in [n for n in self.pods if n not in present]:
            await self._forget(self.pods[name])
        async with api.get(f"{base}/configmaps", params={"labelSelector": _MANAGED}) as response:
            configmaps = (await response.json())["items"]
        publications = [_publication(c) for c in configmaps]
        with self.lock:
            for publication in publications:
                if publication is not None:
                    self._apply(*publication)
            self._restore(elapsed)

    async def _start_pod(self, api: aiohttp.ClientSession, item: dict[str, Any]) -> None:
        metadata = item["metadata"]
        name = metadata["name"]
        app = (metadata.get("labels") or {}).get(contract.APP_LABEL, "")
        pod = FakePod(name=name, app=app, uid=metadata["uid"], lags=dict(self._kept.pop(name, {})))
        application = web.Application()

        async def metrics(_: web.Request) -> web.Response:
            return self._serve(pod)

        application.router.add_get("/metrics", metrics)
        pod.runner = web.AppRunner(application, access_log=None)
        await pod.runner.setup()
        await web.TCPSite(pod.runner, "127.0.0.1", 0).start()
        pod.port = int(pod.runner.addresses[0][1])
        bound = (item.get("spec") or {}).get("nodeName")
        zones = {node_name(zone): zone for zone in ZONES}
        zone = zones.get(bound) if bound else choose_zone(item.get("spec") or {}, ZONES, self._zone_load())
        path = f"/api/v1/namespaces/{self.namespace}/pods/{name}"
        patch = {"metadata": {"annotations": {names.METRICS_PORT_ANNOTATION: str(pod.port)}}}
        await api.patch(path, json=patch, headers=_MERGE)
        # A pod that accepts no zone stays unbound, as with the sandbox's kubelet; a pod is bound as a
        # scheduler binds it (its spec cannot change).
        if zone is not None:
            if not bound:
                target = {"apiVersion": "v1", "kind": "Node", "name": node_name(zone)}
                binding = {
                    "apiVersion": "v1",
                    "kind": "Binding",
                    "metadata": {"name": name},
                    "target": target,
                }
                await api.post(f"{path}/binding", json=binding)
            pod.zone = zone
        self.pods[name] = pod

    def _zone_load(self) -> dict[str, int]:
        load = dict.fromkeys(ZONES, 0)
        for pod in self.pods.values():
            if pod.zone is not None:
                load[pod.zone] += 1
        return load

    async def _report_status(self, api: aiohttp.ClientSession, item: dict[str, Any], ready: bool) -> None:
        status = item.get("status") or {}
        conditions = status.get("conditions") or []
        is_ready = any(c.get("type") == "Ready" and c.get("status") == "True" for c in conditions)
        if status.get("podIP") and is_ready == ready:
            return
        condition = {"type": "Ready", "status": "True" if ready else "False"}
        body = {"status": {"phase": "Running", "podIP": "127.0.0.1", "conditions": [condition]}}
        path = f"/api/v1/namespaces/{self.namespace}/pods/{item['metadata']['name']}/status"
        await api.patch(path, json=body, headers=_MERGE)

    async def _forget(self, pod: FakePod) -> None:
        """The pod is gone: it processes nothing any more (its state survives only with `keep_state`)."""
        with self.lock:
            if self.keep_state:
                self._kept[pod.name] = dict(pod.lags)
            del self.pods[pod.name]
        await self._stop_pod(pod)

    @staticmethod
    async def _stop_pod(pod: FakePod) -> None:
        if pod.runner is not None:
            await pod.runner.cleanup()
            pod.runner = None

    def _serve(self, pod: FakePod) -> web.Response:
        if pod.mode == "down":
            raise web.HTTPServiceUnavailable()
        if pod.mode == "garbage":
            return web.Response(text="<html>this is not prometheus {{{</html>")
        with self.lock:
            return web.Response(text=pod.exposition(self.changelog, self.process_rates))

    # -- the pods' behaviour -------------------------------------------------------------------------------

    def _apply(self, app: str, publication: Publication) -> None:
        seen = self.seen.setdefault(app, [])
        if not seen or seen[-1][0] != publication.generation:
            seen.append((publication.generation, time.time()))
        members = [p for p in self.pods.values() if p.app == app]
        for pod in members:
            if pod.hold or pod.generation >= publication.generation:
                continue
            roles = publication.assignment.get(pod.name)
            active = set(roles.active) if roles else set()
            for task in sorted(active - pod.active):
                others = [p.name for p in members if p is not pod and task in p.active]
                if others:
                    where = f"{app} generation {publication.generation}"
                    self.violations.append(f"{where}: {pod.name} starts {task} while {others} run it")
            pod.active = active
            pod.standby = set(roles.standby) if roles else set()
            pod.warmup = set(roles.warmup) if roles else set()
            for task in pod.held():
                if task not in pod.lags:
                    pod.lags[task] = self.changelog * (1 - self.restore_jitter * self._random.random())
            pod.generation = publication.generation

    def _restore(self, elapsed: float) -> None:
        now = time.time()
        for pod in self.pods.values():
            for task in pod.held():
                lag = max(0.0, pod.lags.get(task, float(self.changelog)) - self.restore_rate * elapsed)
                pod.lags[task] = lag
                restoring = task in pod.warmup or task in pod.standby
                if restoring and lag <= self.catch_up_lag and task not in pod.caught_up:
                    pod.caught_up[task] = now


def _publication(configmap: dict[str, Any]) -> tuple[str, Publication] | None:
    app = ((configmap.get("metadata") or {}).get("labels") or {}).get(contract.APP_LABEL)
    encoded = (configmap.get("binaryData") or {}).get(contract.ASSIGNMENT_KEY)
    if not app or not encoded:
        return None
    return app, decode_publication(base64.b64decode(encoded))
