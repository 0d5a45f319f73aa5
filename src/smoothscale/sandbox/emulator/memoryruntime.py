"""A pod runtime without processes: each pod's container is faked in memory, so that the operator's
integration tests and its benchmark can run a thousand pods on a laptop.

The kubelet stand-in (`smoothscale.sandbox.kubelet`) binds, starts, reports, restarts and deletes the pods
as it does for real processes; this runtime plays what runs inside them, from an event loop of its own:

- every pod serves its Contract 3 metrics from memory on 127.0.0.1 and a port of its own (all pods share the
  IP, so the port goes in the `smoothscale.io/metrics-port` annotation), with the processing rate in
  `process_rates` of each task the pod runs active;
- each pod reads its app's assignment ConfigMap, applies the newest generation unless `hold`, and reports
  it; every task a pod holds (active, standby, warmup) catches up at `restore_rate` offsets per second from
  `changelog` (or from the state it kept: after a crash in the same pod, or with `keep_state` when a pod
  comes back under its name);
- it checks, every time a pod applies a generation, that no task is processed by two pods at once, and
  records each violation (`violations` must stay empty: the two-phase hand-over's promise).

A pod is Ready while its container runs and its name is not in `not_ready`. `memory_kubelet()` starts the
stand-in with this runtime against an emulator and yields the runtime: what tests change and observe.
"""

from __future__ import annotations

import asyncio
import itertools
import random
import signal
import tempfile
import threading
import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import aiohttp
from aiohttp import web

from smoothscale.contract import shared_names as contract
from smoothscale.contract.configmap import from_configmap
from smoothscale.contract.publication import Publication
from smoothscale.contract.version import CONTRACT_VERSION
from smoothscale.control import object_names
from smoothscale.sandbox.kubelet import Kubelet
from smoothscale.sandbox.podruntime import Body, Launch
from smoothscale.sandbox.podspec import AppSettings

from .server import RunningEmulator

HOST = "127.0.0.1"
_MANAGED = f"{object_names.MANAGED_BY_LABEL}={object_names.MANAGED_BY}"
_KILLED = 128 + signal.SIGKILL


@dataclass
class FakePod:
    """The container of one pod: its assignment, its state (lags) and how it misbehaves."""

    name: str
    namespace: str
    app: str
    uid: str
    id: int
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
    frozen: bool = False
    """SIGSTOPped: its metrics hang, it applies and restores nothing."""
    exit_code: int | None = None
    caught_up: dict[str, float] = field(default_factory=dict)
    """task -> the time its metrics first showed it within `catch_up_lag`, while a warmup or standby."""

    def held(self) -> set[str]:
        return self.active | self.standby | self.warmup

    def exposition(self, changelog: int, process_rates: Mapping[str, float]) -> str:
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
        lines.append(f"{contract.CONTRACT_VERSION_METRIC} {CONTRACT_VERSION}")
        return "\n".join(lines) + "\n"


class MemoryRuntime:
    """See the module docstring. Pods' `mode` and `hold`, `not_ready`, `keep_state` and the rates change
    live; `pods` holds the running pods by name."""

    def __init__(
        self,
        url: str,
        *,
        restore_rate: float = 400_000,
        changelog: int = 100_000,
        catch_up_lag: int = 1_000,
        restore_jitter: float = 0.0,
        seed: int = 0,
        tick: float = 0.05,
    ) -> None:
        self.url = url
        self.restore_rate = restore_rate
        self.changelog = changelog
        self.catch_up_lag = catch_up_lag
        self.restore_jitter = restore_jitter
        self.tick = tick
        self.keep_state = False
        self.process_rates: dict[str, float] = {}
        """task -> records/s its active pod reports (`smoothscale_task_process_rate`); others report none."""
        self.not_ready: set[str] = set()
        self.pods: dict[str, FakePod] = {}
        self.violations: list[str] = []
        self.scrapes = 0
        """Metrics requests the pods answered (the benchmark's measure of how often the operator scraped)."""
        self.seen: dict[str, list[tuple[int, float]]] = {}
        """app -> (generation, the time it was first seen) of every generation the pods saw."""
        self.lock = threading.Lock()
        self.error: BaseException | None = None
        """What ended the runtime's loop early, if anything."""
        self._random = random.Random(seed)
        self._ids = itertools.count(1)
        self._kept: dict[str, dict[str, float]] = {}
        """pod name -> lags, kept with `keep_state` when the pod went."""
        self._crashed: dict[str, dict[str, float]] = {}
        """pod uid -> lags, kept when its container was killed (the pod's own volume)."""
        self._loop = asyncio.new_event_loop()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="memory-runtime", daemon=True)

    # -- PodRuntime -----------------------------------------------------------------------------------------

    def open(self) -> None:
        self._thread.start()

    def close(self) -> None:
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join(timeout=10)

    def address(self, pod: Body, settings: AppSettings) -> str:
        return HOST  # every pod: its own port, in the annotation

    def start(self, launch: Launch) -> MemoryContainer:
        metadata = launch.pod["metadata"]
        uid = metadata["uid"]
        with self.lock:
            lags = self._crashed.pop(uid, None) or self._kept.pop(metadata["name"], {})
        pod = FakePod(
            name=metadata["name"],
            namespace=metadata["namespace"],
            app=(metadata.get("labels") or {}).get(contract.APP_LABEL, ""),
            uid=uid,
            id=next(self._ids),
            lags=dict(lags),
        )
        asyncio.run_coroutine_threadsafe(self._serve(pod), self._loop).result(timeout=30)
        with self.lock:
            self.pods[pod.name] = pod
        return MemoryContainer(self, pod)

    def stop(self, pod: FakePod, code: int) -> None:
        """The container exits with `code`: it processes nothing any more. Its state stays for a restart in
        the same pod when it was killed, and for the next pod of its name with `keep_state`."""
        with self.lock:
            if pod.exit_code is not None:
                return
            pod.exit_code = code
            if code == _KILLED:
                self._crashed[pod.uid] = dict(pod.lags)
            elif self.keep_state:
                self._kept[pod.name] = dict(pod.lags)
            if self.pods.get(pod.name) is pod:
                del self.pods[pod.name]
        if pod.runner is not None and not self._loop.is_closed() and self._thread.is_alive():
            asyncio.run_coroutine_threadsafe(_close(pod), self._loop).result(timeout=30)

    # -- what tests ask --------------------------------------------------------------------------------------

    def pod(self, name: str, timeout: float = 20.0) -> FakePod:
        """The running fake pod of that name, once the stand-in has started it."""
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
        asyncio.set_event_loop(self._loop)
        try:
            self._loop.run_until_complete(self._main())
        except BaseException as error:
            self.error = error
        finally:
            for pod in list(self.pods.values()):
                self._loop.run_until_complete(_close(pod))
            self._loop.close()

    async def _main(self) -> None:
        async with aiohttp.ClientSession(base_url=self.url) as api:
            last = time.monotonic()
            while not self._stop.is_set():
                now = time.monotonic()
                await self._step(api, now - last)
                last = now
                await asyncio.sleep(self.tick)

    async def _step(self, api: aiohttp.ClientSession, elapsed: float) -> None:
        with self.lock:
            namespaces = sorted({pod.namespace for pod in self.pods.values()})
        publications = []
        for namespace in namespaces:
            path = f"/api/v1/namespaces/{namespace}/configmaps"
            async with api.get(path, params={"labelSelector": _MANAGED}) as response:
                configmaps = (await response.json())["items"]
            publications += [(namespace, *found) for c in configmaps if (found := _publication(c))]
        with self.lock:
            for namespace, app, publication in publications:
                self._apply(namespace, app, publication)
            self._restore(elapsed)

    async def _serve(self, pod: FakePod) -> None:
        async def metrics(_: web.Request) -> web.Response:
            while pod.frozen:
                await asyncio.sleep(0.05)
            if pod.mode == "down":
                raise web.HTTPServiceUnavailable()
            if pod.mode == "garbage":
                return web.Response(text="<html>this is not prometheus {{{</html>")
            with self.lock:
                self.scrapes += 1
                return web.Response(text=pod.exposition(self.changelog, self.process_rates))

        application = web.Application()
        application.router.add_get("/metrics", metrics)
        pod.runner = web.AppRunner(application, access_log=None)
        await pod.runner.setup()
        await web.TCPSite(pod.runner, HOST, 0).start()
        pod.port = int(pod.runner.addresses[0][1])

    # -- the pods' behaviour -------------------------------------------------------------------------------

    def _apply(self, namespace: str, app: str, publication: Publication) -> None:
        seen = self.seen.setdefault(app, [])
        if not seen or seen[-1][0] != publication.generation:
            seen.append((publication.generation, time.time()))
        members = [p for p in self.pods.values() if (p.namespace, p.app) == (namespace, app)]
        for pod in members:
            if pod.hold or pod.frozen or pod.generation >= publication.generation:
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
            if pod.frozen:
                continue
            for task in pod.held():
                lag = max(0.0, pod.lags.get(task, float(self.changelog)) - self.restore_rate * elapsed)
                pod.lags[task] = lag
                restoring = task in pod.warmup or task in pod.standby
                if restoring and lag <= self.catch_up_lag and task not in pod.caught_up:
                    pod.caught_up[task] = now


class MemoryContainer:
    """A fake pod as the stand-in's `Container`: signals act at once (no process to wait for)."""

    def __init__(self, runtime: MemoryRuntime, pod: FakePod) -> None:
        self.runtime = runtime
        self.pod = pod

    @property
    def id(self) -> int:
        return self.pod.id

    @property
    def annotations(self) -> Mapping[str, str]:
        return {object_names.METRICS_PORT_ANNOTATION: str(self.pod.port)}

    def poll(self) -> int | None:
        return self.pod.exit_code

    def wait(self, timeout: float | None) -> int | None:
        return self.pod.exit_code

    def send_signal(self, signum: int) -> None:
        if signum in (signal.SIGSTOP, signal.SIGCONT):
            self.pod.frozen = signum == signal.SIGSTOP
        elif signum in (signal.SIGTERM, signal.SIGKILL):
            self.runtime.stop(self.pod, 0 if signum == signal.SIGTERM else _KILLED)

    def ready(self) -> bool:
        return self.pod.exit_code is None and self.pod.name not in self.runtime.not_ready


async def _close(pod: FakePod) -> None:
    if pod.runner is not None:
        await pod.runner.cleanup()
        pod.runner = None


def _publication(configmap: Mapping[str, Any]) -> tuple[str, Publication] | None:
    app = ((configmap.get("metadata") or {}).get("labels") or {}).get(contract.APP_LABEL)
    if not app or contract.ASSIGNMENT_KEY not in (configmap.get("binaryData") or {}):
        return None
    return app, from_configmap(configmap)


@contextmanager
def memory_kubelet(
    cluster: RunningEmulator, *, namespace: str | None = "default", **options: Any
) -> Iterator[MemoryRuntime]:
    """The kubelet stand-in with fake pods (`options`: `MemoryRuntime`'s) on the emulator `cluster`; yields
    the runtime. A failure of the runtime's loop fails the block when nothing else did."""
    runtime = MemoryRuntime(cluster.url, **options)
    with (
        tempfile.TemporaryDirectory(prefix="memory-kubelet-") as root,
        Kubelet(cluster.kubeconfig, Path(root), runtime, namespace=namespace),
    ):
        yield runtime
    if runtime.error is not None:
        raise runtime.error
