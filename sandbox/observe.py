"""Snapshots of a running app for the demo's live view and timeline: per pod, its roles, lag and generation.

Roles come from the published assignment, lags and acknowledged generations from each pod's own metrics
endpoint (the same `http://<podIP>:<port><path>` the operator scrapes), and the app's state from its status.
"""

from __future__ import annotations

import time
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from prometheus_client.parser import text_string_to_metric_families

from smoothscale.contract import names as contract
from smoothscale.contract.publication import ClientAssignment

from .harness import Sandbox
from .scheduling import node_name


@dataclass(frozen=True)
class PodView:
    name: str
    zone: str
    ready: bool
    leaving: bool
    revision: str
    active: int
    standby: int
    warmup: int
    lag: int
    """Offsets behind, summed over the tasks the pod holds (active, standby, warmup)."""
    generation: int | None
    """The generation the pod reports as applied; None when its metrics cannot be read."""


@dataclass(frozen=True)
class Snapshot:
    at: float
    step: str
    generation: int
    revoking: int
    pods: tuple[PodView, ...]
    replicas: int
    ready: int
    stable: bool
    migrating: bool
    next_probe: str | None

    @property
    def warmups(self) -> int:
        return sum(pod.warmup for pod in self.pods)

    @property
    def total_lag(self) -> int:
        return sum(pod.lag for pod in self.pods)

    @property
    def settled(self) -> bool:
        """Nothing left to do: stable, every pod ready, same revision, and on the published generation."""
        return (
            self.stable
            and not self.migrating
            and self.revoking == 0
            and len(self.pods) == self.replicas == self.ready
            and len({pod.revision for pod in self.pods}) == 1
            and not any(pod.leaving for pod in self.pods)
            and all(pod.generation == self.generation for pod in self.pods)
        )


def observe(sandbox: Sandbox, app: str, step: str) -> Snapshot:
    body = sandbox.app(app)
    status = body.get("status") or {}
    conditions = {c.get("type"): c.get("status") for c in status.get("conditions") or []}
    metrics = (body.get("spec") or {}).get("metrics") or {}
    port = int(metrics.get("port") or contract.DEFAULT_METRICS_PORT)
    path = str(metrics.get("path") or contract.DEFAULT_METRICS_PATH)
    publication = sandbox.publication(app)
    assignment = publication.assignment if publication is not None else {}
    zones = {node_name(zone): zone for zone in sandbox.zones}
    views = []
    for pod in sorted(sandbox.pods(app), key=lambda p: pod_order(p["metadata"]["name"])):
        name = pod["metadata"]["name"]
        roles = assignment.get(name, ClientAssignment())
        held = {*roles.active, *roles.standby, *roles.warmup}
        lags, generation = _scrape(pod, port, path)
        views.append(
            PodView(
                name=name,
                zone=zones.get((pod.get("spec") or {}).get("nodeName") or "", "-"),
                ready=_ready(pod),
                leaving=contract.LEAVING_ANNOTATION in (pod["metadata"].get("annotations") or {})
                or bool(pod["metadata"].get("deletionTimestamp")),
                revision=(pod["metadata"].get("labels") or {}).get("smoothscale.io/revision", ""),
                active=len(roles.active),
                standby=len(roles.standby),
                warmup=len(roles.warmup),
                lag=sum(lag for task, lag in lags.items() if task in held),
                generation=generation,
            )
        )
    return Snapshot(
        at=time.time(),
        step=step,
        generation=publication.generation if publication is not None else 0,
        revoking=len(publication.revoking) if publication is not None else 0,
        pods=tuple(views),
        replicas=int((body.get("spec") or {}).get("replicas") or 0),
        ready=int(status.get("readyReplicas") or 0),
        stable=conditions.get("Stable") == "True",
        migrating=conditions.get("Migrating") == "True",
        next_probe=(status.get("probing") or {}).get("nextProbeTime"),
    )


def pod_order(name: str) -> tuple[int, str]:
    """Pods by ordinal (`orders-10` after `orders-9`), others after them by name."""
    tail = name.rsplit("-", 1)[-1]
    return (int(tail), name) if tail.isdigit() else (1 << 30, name)


def _ready(pod: dict[str, Any]) -> bool:
    conditions = (pod.get("status") or {}).get("conditions") or []
    return any(c.get("type") == "Ready" and c.get("status") == "True" for c in conditions)


def _scrape(pod: dict[str, Any], port: int, path: str) -> tuple[dict[str, int], int | None]:
    ip = (pod.get("status") or {}).get("podIP")
    if not ip:
        return {}, None
    try:
        with urllib.request.urlopen(f"http://{ip}:{port}{path}", timeout=1.0) as response:
            text = response.read().decode()
    except OSError:
        return {}, None
    lags: dict[str, int] = {}
    generation: int | None = None
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            if sample.name == contract.TASK_LAG_METRIC:
                lags[sample.labels[contract.TASK_LABEL]] = int(sample.value)
            elif sample.name == contract.GENERATION_METRIC:
                generation = int(sample.value)
    return lags, generation


def settle(
    sandbox: Sandbox,
    app: str,
    step: str,
    *,
    timeout: float,
    also: Callable[[Snapshot], bool] = lambda _: True,
    on_snapshot: Callable[[Snapshot], None] = lambda _: None,
    sample_seconds: float = 1.0,
    min_seconds: float = 2.0,
) -> Snapshot | None:
    """Sample the app until it has settled on the spec as it is now (the operator has observed its
    generation) and `also` holds; the settled snapshot, or None after `timeout` seconds. `min_seconds` gives
    the operator time to react to a change that does not touch the spec (a crash)."""
    started = time.time()
    wanted = int(sandbox.app(app)["metadata"].get("generation") or 0)
    while time.time() - started < timeout:
        snapshot = observe(sandbox, app, step)
        on_snapshot(snapshot)
        status = sandbox.app(app).get("status") or {}
        observed = int(status.get("observedGeneration") or 0) >= wanted
        if observed and snapshot.settled and also(snapshot) and time.time() - started >= min_seconds:
            return snapshot
        time.sleep(sample_seconds)
    return None
