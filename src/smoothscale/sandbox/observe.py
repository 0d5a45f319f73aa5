"""Snapshots of a running app for the demo's live view and timeline: per pod, its roles, lag and generation.

Roles come from the published assignment, lags, acknowledged generations and the bridge's fallbacks from
each pod's own metrics endpoint (the same `http://<podIP>:<port><path>` the operator scrapes), the app's
state from its status, and, for Kafka Streams apps, Kafka's own view of the group (`group_view`).

A task is *processing* on a pod when the pod has it active and reports it restored (an active task's lag
is 0 once it processes: Kafka Streams reports a running active task at its changelog's end, the sample
worker too). Who has it active is Kafka's view of the group where it is read (a task the plan moved stays
with its old owner until Kafka revokes it), else the plan (a task being revoked with its old owner). An app
has settled only when every task is processing on its planned owner: a pod that acknowledged its generation
may still be restoring what it was given.
"""

from __future__ import annotations

import time
import urllib.request
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from prometheus_client.parser import text_string_to_metric_families

from smoothscale.contract import shared_names as contract
from smoothscale.contract.publication import ClientAssignment, Publication

from .app_view import AppSource
from .group_view import app_tasks
from .podspec import metrics_port
from .records import Interval
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
    behind: frozenset[str] = frozenset()
    """The tasks it reports behind their changelog (an active one is restoring, not processing yet)."""
    fallbacks: Mapping[str, int] = field(default_factory=dict)
    """The bridge's fallbacks this pod's process counted, by reason (Kafka Streams pods)."""
    failovers: int = 0
    """The rebalances this pod's process led failing a gone pod's actives over to their copies (Kafka
    Streams pods)."""
    scraped: bool = True
    """Whether its metrics could be read."""


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
    planned: Mapping[str, frozenset[str]] = field(default_factory=dict)
    """The published active tasks of each pod, a task being revoked (and active nowhere) its old owner's."""
    kafka_view: Mapping[str, frozenset[str]] | None = None
    """Kafka's view of the group (active tasks per pod) when read; None when not read or unreadable."""
    kafka_read: bool = False
    """Whether this snapshot asked Kafka for its view (a Kafka Streams app)."""
    tasks: tuple[str, ...] = ()
    """Every task of the app, as its topology says."""
    migration: Migration | None = None
    """The migration the status shows in progress (`status.progress`), if any."""

    @property
    def plan_matches_kafka(self) -> bool | None:
        """Whether Kafka's view of the group is the published actives; None when Kafka was not asked."""
        if not self.kafka_read:
            return None
        if self.kafka_view is None:
            return False
        return _nonempty(self.kafka_view) == _nonempty(self.planned)

    @property
    def processing(self) -> dict[str, str]:
        """Each task processing somewhere (see the module's docstring), with the pod processing it."""
        pods = {pod.name: pod for pod in self.pods}
        owners = self.planned if not self.kafka_read else (self.kafka_view or {})
        found: dict[str, str] = {}
        for name, tasks in owners.items():
            pod = pods.get(name)
            if pod is not None and pod.scraped:  # else nothing is known of what it runs
                found.update(dict.fromkeys(tasks - pod.behind, name))
        return found

    @property
    def planned_owner(self) -> dict[str, str]:
        return {task: pod for pod, tasks in self.planned.items() for task in tasks}

    @property
    def warmups(self) -> int:
        return sum(pod.warmup for pod in self.pods)

    @property
    def total_lag(self) -> int:
        return sum(pod.lag for pod in self.pods)

    @property
    def settled(self) -> bool:
        """Nothing left to do: stable, every pod ready, same revision, on the published generation, and every
        task processing on its planned owner."""
        return (
            self.stable
            and not self.migrating
            and self.revoking == 0
            and len(self.pods) == self.replicas == self.ready
            and len({pod.revision for pod in self.pods}) == 1
            and not any(pod.leaving for pod in self.pods)
            and all(pod.generation == self.generation for pod in self.pods)
            and self.plan_matches_kafka is not False
            and self.processing == self.planned_owner
            and set(self.tasks) <= set(self.processing)
        )


@dataclass(frozen=True)
class Migration:
    """A migration as the app's status shows it (`status.progress`): times in epoch seconds."""

    started: float
    percent: float
    records: int
    """Records restored and left."""
    eta: float | None
    first_eta: float | None

    @classmethod
    def of(cls, progress: Mapping[str, Any] | None) -> Migration | None:
        if not progress:
            return None
        return cls(
            started=_epoch(progress["startTime"]) or 0.0,
            percent=float(progress.get("percent") or 0.0),
            records=int(progress.get("recordsRestored") or 0) + int(progress.get("recordsLeft") or 0),
            eta=_epoch(progress.get("estimatedCompletionTime")),
            first_eta=_epoch(progress.get("firstEstimatedCompletionTime")),
        )


def _epoch(timestamp: str | None) -> float | None:
    return None if not timestamp else datetime.fromisoformat(timestamp).timestamp()


GroupView = Callable[[Mapping[str, Any]], Mapping[str, set[str]] | None]
"""Kafka's view of a StreamsApp's group (active tasks per pod), given the app as the API shows it; None when
it cannot be read now (`group_view.GroupView`)."""


@dataclass(frozen=True)
class PodReport:
    """What is known of one pod's process: what its metrics endpoint says, or, for an app on the streams
    protocol (whose pods serve no metrics), what Kafka's view of its members says (`streams_observe`)."""

    scraped: bool = False
    """Whether anything was read (else nothing is known of what the pod runs)."""
    lags: Mapping[str, int] = field(default_factory=dict)
    """Offsets behind per task it keeps state for (an active task restoring: above 0)."""
    generation: int | None = None
    """The generation of the plan it runs; None when unknown."""
    fallbacks: Mapping[str, int] = field(default_factory=dict)
    failovers: int = 0


PodReports = Callable[[Mapping[str, Any], Publication | None], Mapping[str, PodReport]]
"""Every pod's report, given the app as the API shows it and its publication, read from elsewhere than the
pods' metrics endpoints (pods left out: nothing known)."""


def observe(
    sandbox: AppSource,
    app: str,
    step: str,
    group_view: GroupView | None = None,
    reports: PodReports | None = None,
) -> Snapshot:
    """The app now; each pod as its metrics endpoint reports it, or as `reports` gives it."""
    body = sandbox.app(app)
    status = body.get("status") or {}
    conditions = {c.get("type"): c.get("status") for c in status.get("conditions") or []}
    metrics = (body.get("spec") or {}).get("metrics") or {}
    port = metrics_port(body.get("spec") or {})
    path = str(metrics.get("path") or contract.DEFAULT_METRICS_PATH)
    publication = sandbox.publication(app)
    assignment = publication.assignment if publication is not None else {}
    zones = {node_name(zone): zone for zone in sandbox.zones}
    reported = None if reports is None else reports(body, publication)
    views = []
    for pod in sorted(sandbox.pods(app), key=lambda p: pod_order(p["metadata"]["name"])):
        name = pod["metadata"]["name"]
        roles = assignment.get(name, ClientAssignment())
        held = {*roles.active, *roles.standby, *roles.warmup}
        report = _scrape(pod, port, path) if reported is None else reported.get(name, PodReport())
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
                lag=sum(lag for task, lag in report.lags.items() if task in held),
                generation=report.generation,
                behind=frozenset(task for task, lag in report.lags.items() if lag > 0),
                fallbacks=report.fallbacks,
                failovers=report.failovers,
                scraped=report.scraped,
            )
        )
    view = None if group_view is None else group_view(body)
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
        planned=_planned(publication),
        kafka_view=None if view is None else {pod: frozenset(tasks) for pod, tasks in view.items()},
        kafka_read=group_view is not None,
        tasks=tuple(app_tasks(body)),
        migration=Migration.of(status.get("progress")),
    )


def _planned(publication: Publication | None) -> dict[str, frozenset[str]]:
    if publication is None:
        return {}
    owners = publication.active_owner()
    for task, revocation in publication.revoking.items():
        owners.setdefault(task, revocation.owner)
    planned: dict[str, set[str]] = {pod: set() for pod in publication.assignment}
    for task, pod in owners.items():
        planned.setdefault(pod, set()).add(task)
    return {pod: frozenset(tasks) for pod, tasks in planned.items()}


def _nonempty(view: Mapping[str, frozenset[str]]) -> dict[str, frozenset[str]]:
    return {pod: tasks for pod, tasks in view.items() if tasks}


def pod_order(name: str) -> tuple[int, str]:
    """Pods by ordinal (`orders-10` after `orders-9`), others after them by name."""
    tail = name.rsplit("-", 1)[-1]
    return (int(tail), name) if tail.isdigit() else (1 << 30, name)


def _ready(pod: dict[str, Any]) -> bool:
    conditions = (pod.get("status") or {}).get("conditions") or []
    return any(c.get("type") == "Ready" and c.get("status") == "True" for c in conditions)


def _scrape(pod: dict[str, Any], port: int, path: str) -> PodReport:
    """The pod's metrics endpoint: per task lag, the generation applied, the bridge's fallbacks by reason
    and its fail-overs."""
    ip = (pod.get("status") or {}).get("podIP")
    if not ip:
        return PodReport()
    try:
        with urllib.request.urlopen(f"http://{ip}:{port}{path}", timeout=1.0) as response:
            text = response.read().decode()
    except OSError:
        return PodReport()
    lags: dict[str, int] = {}
    generation: int | None = None
    fallbacks: dict[str, int] = {}
    failovers = 0
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            if sample.name == contract.TASK_LAG_METRIC:
                lags[sample.labels[contract.TASK_LABEL]] = int(sample.value)
            elif sample.name == contract.GENERATION_METRIC:
                generation = int(sample.value)
            elif sample.name == contract.ASSIGNOR_FALLBACKS_METRIC:
                fallbacks[sample.labels.get("reason", "")] = int(sample.value)
            elif sample.name == contract.ASSIGNOR_FAILOVERS_METRIC:
                failovers = int(sample.value)
    return PodReport(True, lags, generation, fallbacks, failovers)


def spec_generation(sandbox: AppSource, app: str) -> int:
    """The app's spec generation now: a wait that follows a change waits for the operator to observe it."""
    return int(sandbox.app(app)["metadata"].get("generation") or 0)


def generation_observed(sandbox: AppSource, app: str, generation: int) -> bool:
    """Whether the operator's status says it has acted on the spec of `generation` (or a later one): until
    then, an app settled on the previous spec has not even begun the change (a loaded operator's round may
    come a few seconds after the patch)."""
    status = sandbox.app(app).get("status") or {}
    return int(status.get("observedGeneration") or 0) >= generation


def settle(
    sandbox: AppSource,
    app: str,
    step: str,
    *,
    timeout: float,
    also: Callable[[Snapshot], bool] = lambda _: True,
    on_snapshot: Callable[[Snapshot], None] = lambda _: None,
    sample_seconds: float = 1.0,
    min_seconds: float = 2.0,
    group_view: GroupView | None = None,
    reports: PodReports | None = None,
) -> Snapshot | None:
    """Sample the app until it has settled on the spec as it is now (the operator has observed its
    generation) and `also` holds; the settled snapshot, or None after `timeout` seconds. `min_seconds` gives
    the operator time to react to a change that does not touch the spec (a crash)."""
    started = time.time()
    wanted = spec_generation(sandbox, app)
    while time.time() - started < timeout:
        snapshot = observe(sandbox, app, step, group_view, reports)
        on_snapshot(snapshot)
        observed = generation_observed(sandbox, app, wanted)
        if observed and snapshot.settled and also(snapshot) and time.time() - started >= min_seconds:
            return snapshot
        time.sleep(sample_seconds)
    return None


def processing_intervals(timeline: Sequence[Snapshot]) -> list[Interval]:
    """Each run of consecutive snapshots in which one pod processed a task, as an interval from the first of
    them to the last (`records.Interval`, pid 0): what the demo judges hand-overs and gaps by when the pods
    write no records of their own (Kafka Streams pods). A hand-over shorter than the time between two
    snapshots shows as that time."""
    intervals: list[Interval] = []
    running: dict[str, Interval] = {}
    for snapshot in timeline:
        processing = snapshot.processing
        for task in set(running) | set(processing):
            current, pod = running.get(task), processing.get(task)
            if current is not None and current.pod != pod:
                intervals.append(running.pop(task))
                current = None
            if pod is not None:
                start = snapshot.at if current is None else current.start
                running[task] = Interval(task, start, snapshot.at, pod, 0)
    return sorted([*intervals, *running.values()])
