"""One reconciliation of one app: observe, decide with the pure modules, act, report.

The order matters for safety:

1. read the spec (an invalid one freezes the pod set and planning; hand-overs already decided go on), and
   list the pods from the API server (never a cache: a pod missing from a cache is not a pod that is gone);
2. scrape every pod (lags, changelog end offsets, acknowledged generations);
3. the pod set: stamp, mark or take back leaving pods, delete retired, stopped or restarting pods, create
   missing ones (a name is only reused once no published task names it);
4. plan, when a trigger says so and no holder's metrics are missing;
5. hand over: publish the next generation toward the plan (`next_publication`), conditional on the
   ConfigMap's resourceVersion;
6. report: status, Events, metrics, journal.

All memory kept between rounds is a cache or a debounce: the published generation is re-read from the
ConfigMap after a restart (or a conflicting write), leaving times live in the pods' annotations, and a
restarted operator plans afresh from what it observes.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any

from pydantic import ValidationError

from smoothscale.assignor.handover import Publication, is_settled, next_publication
from smoothscale.assignor.models import Plan
from smoothscale.assignor.planner import plan as make_plan

from . import events as ev
from . import names
from .appref import AppRef
from .kube import KubeError, core_path, group_path
from .pods import PodInfo, format_time, leaving_since, pod_info
from .podset import build_pod, build_state_claim, template_revision
from .probing import (
    PlanMemory,
    PlanTrigger,
    caught_up_moves,
    desired_reachable,
    fingerprint,
    first_plan_waits,
    holders,
    missing_holders,
    plan_trigger,
)
from .publish import AssignmentUnreadableError, Published, load_published, publish
from .resource import InvalidSpecError, StreamsAppSpec, StreamsAppStatus, load_spec, planner_config
from .resource import names as resource_names
from .scaling import PodSetInput, as_planned, plan_pod_set
from .scrape import PodMetrics, ScrapeFailure, ScrapeResult, metrics_url
from .snapshot import ClientObservation, build_snapshot, merge_end_offsets, task_ids
from .status import Leaving, PlanOutcome, Problem, StatusInput, build_status
from .zones import pod_zone

if TYPE_CHECKING:
    from .context import OperatorContext

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class Observation:
    """What kopf knows about an app right now: its object, and the nodes' zones (from kopf's index)."""

    body: Mapping[str, Any]
    zones: Mapping[str, str]


@dataclass
class _Round:
    """Facts gathered during one reconciliation, passed between its steps."""

    now: datetime
    spec: StreamsAppSpec | None
    problems: list[str] | None
    pods: list[PodInfo]
    results: dict[str, ScrapeResult]
    failures: dict[str, ScrapeFailure] = field(default_factory=dict)
    degraded: Problem | None = None


class AppReconciler:
    def __init__(self, app: AppRef, context: OperatorContext) -> None:
        self.app = app
        self.ctx = context
        self.published: Published | None = None
        self.memory: PlanMemory | None = None
        self.last_good: StreamsAppSpec | None = None
        self.end_offsets: dict[str, int] = {}
        self.failing: set[str] = set()
        self.problems: list[str] | None = None
        self.known_pods: set[str] = set()
        self.deleted_by_us: set[str] = set()
        self.status: dict[str, Any] | None = None
        self.unreadable: str | None = None
        self.started_at = context.clock()

    # -- the round -----------------------------------------------------------------------------------

    async def reconcile(self, seen: Observation) -> None:
        now = self.ctx.clock()
        spec, problems = self._read_spec(seen.body)
        pods = await self._list_pods()
        self._report_lost(pods)
        if self.published is None:
            self.published = await self._load()
        working_spec = spec or self.last_good
        results = await self._scrape(pods, working_spec) if working_spec is not None else {}
        state = _Round(now=now, spec=spec, problems=problems, pods=pods, results=results)
        self._note_scrape(state)
        if spec is not None and self.unreadable is None:
            state.pods = await self._apply_pod_set(spec, state)
            await self._maybe_plan(spec, seen, state)
        if working_spec is not None and self.unreadable is None:
            await self._hand_over(state)
        await self._report(seen, state)

    # -- spec ----------------------------------------------------------------------------------------

    def _read_spec(self, body: Mapping[str, Any]) -> tuple[StreamsAppSpec | None, list[str] | None]:
        try:
            spec = load_spec(body.get("spec") or {})
        except InvalidSpecError as error:
            problems: list[str] | None = list(error.problems)
            spec = None
        else:
            problems = None
            self.last_good = spec
        if problems != self.problems:
            self._post(ev.spec_events(self.problems, problems))
            self._journal("spec", valid=problems is None, problems=problems or [])
            self.problems = problems
        return spec, problems

    # -- observation ---------------------------------------------------------------------------------

    async def _load(self) -> Published | None:
        try:
            published = await load_published(self.ctx.api, self.app)
        except AssignmentUnreadableError as error:
            self.unreadable = str(error)
            return None
        self.unreadable = None
        return published

    async def _list_pods(self) -> list[PodInfo]:
        """The app's pods, read from the API server every round, never from a cache.

        The hand-over lets a task start elsewhere without waiting when its old owner is gone, so "gone" must
        be a fact: a watch cache (kopf's index) can miss pods, e.g. the ones created while this replica was
        paused by peering, and a pod missing from it is not a pod that has stopped.
        """
        selector = f"{names.APP_LABEL}={self.app.name},{names.MANAGED_BY_LABEL}={names.MANAGED_BY}"
        listed = await self.ctx.api.get(core_path(self.app.namespace, "pods"), {"labelSelector": selector})
        pods = (pod_info(item) for item in listed.get("items") or [])
        return [p for p in pods if p.ordinal is not None]

    @property
    def publication(self) -> Publication:
        if self.published is None:
            raise RuntimeError("the published assignment has not been loaded")
        return self.published.publication

    def _report_lost(self, pods: Sequence[PodInfo]) -> None:
        present = {p.name for p in pods}
        gone = self.known_pods - present
        lost = gone - self.deleted_by_us
        self.deleted_by_us -= gone
        if lost:
            self._post(ev.lost_pod_events(lost))
            for pod in sorted(lost):
                self._journal("scaling", step="lost", pod=pod, reason="PodLost")
        self.known_pods = present

    async def _scrape(self, pods: Sequence[PodInfo], spec: StreamsAppSpec) -> dict[str, ScrapeResult]:
        """Every running pod with an address (a pod without one has not started: nothing to ask)."""
        urls = {
            p.name: url
            for p in pods
            if p.alive and not p.deleting and (url := metrics_url(p, spec.metrics)) is not None
        }
        return await self.ctx.scraper.scrape_all(urls, spec.metrics.names)

    def _note_scrape(self, state: _Round) -> None:
        """Failures that matter (a ready pod, or one holding tasks; a pod still starting up is excused):
        Events when a pod starts or stops failing, counts by reason; and the changelog lengths seen."""
        holding = holders(self.publication) if self.published is not None else set()
        ready = {p.name for p in state.pods if p.ready}
        state.failures = {
            pod: r
            for pod, r in state.results.items()
            if isinstance(r, ScrapeFailure) and (pod in ready or pod in holding)
        }
        self._post(ev.scrape_events(self.failing, state.failures, state.results))
        for result in state.failures.values():
            self.ctx.metrics.scrape_failures.labels(self.app.namespace, self.app.name, result.reason).inc()
        self.failing = set(state.failures)
        reports = [r.end_offsets for r in state.results.values() if isinstance(r, PodMetrics)]
        self.end_offsets = merge_end_offsets(self.end_offsets, reports)

    # -- pod set ---------------------------------------------------------------------------------------

    async def _apply_pod_set(self, spec: StreamsAppSpec, state: _Round) -> list[PodInfo]:
        """Carry out the pod-set decisions; returns the pods as planning must see them this round."""
        revision = template_revision(spec)
        storage = spec.storage
        decided = plan_pod_set(
            PodSetInput(
                app=self.app.name,
                replicas=spec.replicas,
                revision=revision,
                strategy=spec.scaling.update_strategy,
                max_surge=spec.scaling.max_surge_pods(spec.replicas),
                scale_down_timeout=planner_config(spec).scale_down_timeout_seconds,
                delete_claims=storage is not None and storage.delete_on_scale_down,
                pods=state.pods,
                holding=holders(self.publication),
                settled=self._settled(),
                now=state.now,
            )
        )
        if decided.empty:
            return as_planned(state.pods, decided, state.now)
        self._post(ev.pod_set_events(decided, self.app.name))
        stamp = format_time(state.now)
        for pod in decided.stamp_leaving:
            await self._annotate(pod, {names.LEAVING_ANNOTATION: stamp}, "stamp-leaving", "DrainRequested")
        for pod, reason in decided.mark_leaving:
            marks = {names.LEAVING_ANNOTATION: stamp, names.LEAVING_REASON_ANNOTATION: reason}
            await self._annotate(pod, marks, "leaving", reason)
        for pod in decided.unmark_leaving:
            unmark = {names.LEAVING_ANNOTATION: None, names.LEAVING_REASON_ANNOTATION: None}
            await self._annotate(pod, unmark, "kept", "ReplicasRaised")
        for retired in decided.retire:
            await self._delete_pod(retired.pod, "retire", retired.reason)
            if retired.delete_claim and retired.ordinal is not None:
                await self._delete(
                    core_path(
                        self.app.namespace,
                        "persistentvolumeclaims",
                        names.state_claim(self.app.name, retired.ordinal),
                    )
                )
        for pod in decided.remove_stopped:
            await self._delete_pod(pod, "remove-stopped", "Stopped")
        for pod in decided.restart:
            await self._delete_pod(pod, "restart", "RollingRestart")
        for ordinal in decided.create:
            await self._create_pod(spec, ordinal, revision)
        return as_planned(state.pods, decided, state.now)

    async def _annotate(
        self, pod: str, annotations: Mapping[str, str | None], step: str, reason: str
    ) -> None:
        path = core_path(self.app.namespace, "pods", pod)
        try:
            await self.ctx.api.patch(path, {"metadata": {"annotations": annotations}})
        except KubeError as error:
            if not error.not_found:
                raise
        self._journal("scaling", step=step, pod=pod, reason=reason)

    async def _delete_pod(self, pod: str, step: str, reason: str) -> None:
        self.deleted_by_us.add(pod)
        await self._delete(core_path(self.app.namespace, "pods", pod))
        self._journal("scaling", step=step, pod=pod, reason=reason)

    async def _delete(self, path: str) -> None:
        try:
            await self.ctx.api.delete(path)
        except KubeError as error:
            if not error.not_found:
                raise

    async def _create_pod(self, spec: StreamsAppSpec, ordinal: int, revision: str) -> None:
        claim = build_state_claim(self.app, spec, ordinal)
        if claim is not None:
            await self._create(core_path(self.app.namespace, "persistentvolumeclaims"), claim)
        pod = build_pod(self.app, spec, ordinal, revision)
        await self._create(core_path(self.app.namespace, "pods"), pod)
        self._journal("scaling", step="create", pod=pod["metadata"]["name"], reason="MissingPod")

    async def _create(self, path: str, body: Mapping[str, Any]) -> None:
        """Create, or find it already there (a claim kept from before, a pod the index has not shown yet)."""
        try:
            await self.ctx.api.create(path, body)
        except KubeError as error:
            if not error.conflict:
                raise

    # -- planning --------------------------------------------------------------------------------------

    def _clients(self, state: _Round, zones: Mapping[str, str]) -> list[ClientObservation]:
        out = []
        for pod in state.pods:
            if not pod.schedulable_client:
                continue
            result = state.results.get(pod.name)
            lags = result.lags if isinstance(result, PodMetrics) else {}
            since = _leaving_time(pod)
            out.append(ClientObservation(pod.name, pod_zone(pod.node, zones), since, lags))
        return out

    async def _maybe_plan(self, spec: StreamsAppSpec, seen: Observation, state: _Round) -> None:
        clients = self._clients(state, seen.zones)
        generation = int((seen.body.get("metadata") or {}).get("generation") or 0)
        lags = {c.pod: dict(c.lags) for c in clients}
        acceptable = spec.assignment.acceptable_recovery_lag
        caught_up = caught_up_moves(self.memory.plan, lags, acceptable) if self.memory else []
        trigger = plan_trigger(self.memory, generation, fingerprint(clients), bool(caught_up), state.now)
        if trigger is None:
            return
        reported = [pod for pod, r in state.results.items() if isinstance(r, PodMetrics)]
        missing = missing_holders(self.publication, [c.pod for c in clients], reported)
        if missing:
            state.degraded = Problem(
                "MetricsUnavailable",
                f"planning held: no metrics from {', '.join(missing)}, which hold tasks; "
                "their tasks stay where they are until the pods report again or are gone",
            )
            self._journal("plan-held", reason=str(trigger), pods=missing)
            return
        if not any(c.leaving_since is None for c in clients):
            return  # no pod that stays is scheduled yet: there is nowhere to put tasks
        staying = [p.name for p in state.pods if not (p.is_leaving or p.deleting or p.stopped)]
        waited = (state.now - self.started_at).total_seconds()
        if first_plan_waits(self.publication, staying, reported, waited, self.ctx.config.startup_grace):
            return
        started = time.perf_counter()
        snapshot = build_snapshot(spec, state.now, clients, self.publication, self.end_offsets)
        result: Plan = await asyncio.to_thread(make_plan, snapshot)
        duration = time.perf_counter() - started
        self.memory = PlanMemory(generation, fingerprint(clients), state.now, result)
        self._record_plan(trigger, result, duration, len(clients), len(snapshot.tasks))

    def _record_plan(
        self, trigger: PlanTrigger, result: Plan, duration: float, clients: int, tasks: int
    ) -> None:
        labels = (self.app.namespace, self.app.name)
        self.ctx.metrics.plan_duration.labels(*labels).observe(duration)
        self.ctx.metrics.plans.labels(*labels, str(result.stable).lower()).inc()
        warmups = [{"task": t, "pod": p} for p, a in result.assignment.items() for t in a.warmup]
        followup = result.followup.model_dump(by_alias=True) if result.followup is not None else None
        self._journal(
            "plan",
            reason=str(trigger),
            stable=result.stable,
            durationSeconds=round(duration, 6),
            stats=result.stats.model_dump(by_alias=True),
            followup=followup,
            warmups=warmups,
            clients=clients,
            tasks=tasks,
        )

    def _settled(self) -> bool:
        memory = self.memory
        return memory is not None and memory.plan.stable and is_settled(self.publication, memory.desired)

    # -- hand-over -------------------------------------------------------------------------------------

    async def _hand_over(self, state: _Round) -> None:
        memory, published = self.memory, self.published
        if memory is None or published is None:
            return
        alive = {p.name for p in state.pods if p.alive}
        if not desired_reachable(memory.desired, alive):
            return  # the plan names a pod that is gone: wait for the next plan
        acked = {
            pod: r.generation
            for pod, r in state.results.items()
            if isinstance(r, PodMetrics) and r.generation is not None
        }
        candidate = next_publication(published.publication, memory.desired, acked, alive)
        if candidate is None:
            return
        try:
            self.published = await publish(self.ctx.api, self.app, published, candidate)
        except KubeError as error:
            if error.conflict:
                self.published = None  # someone else wrote it: read it again next round
            raise
        self._record_publication(published.publication, candidate)

    def _record_publication(self, before: Publication, after: Publication) -> None:
        event = ev.publication_event(before, after)
        self._post([event])
        labels = (self.app.namespace, self.app.name)
        self.ctx.metrics.publications.labels(*labels).inc()
        desired = self.memory.desired if self.memory is not None else {}
        for task in sorted(set(after.revoking) - set(before.revoking)):
            target = next((pod for pod, roles in desired.items() if task in roles.active), None)
            self._journal_handover(task, "revoked", after.revoking[task].owner, target)
        owners = after.active_owner()
        moves = []
        for task, revocation in sorted(before.revoking.items()):
            if task in owners:
                moves.append({"task": task, "from": revocation.owner, "to": owners[task]})
                self._journal_handover(task, "completed", revocation.owner, owners[task])
        self._journal(
            "publication",
            reason=event.reason,
            revoking={t: r.model_dump(by_alias=True) for t, r in after.revoking.items()},
            active=sum(len(a.active) for a in after.assignment.values()),
            standby=sum(len(a.standby) for a in after.assignment.values()),
            warmup=sum(len(a.warmup) for a in after.assignment.values()),
            moves=moves,
        )

    def _journal_handover(self, task: str, step: str, source: str, target: str | None) -> None:
        self._journal("handover", task=task, step=step, **{"from": source, "to": target})

    # -- reporting -------------------------------------------------------------------------------------

    async def _report(self, seen: Observation, state: _Round) -> None:
        spec = state.spec or self.last_good
        spec_tasks = len(task_ids(spec)) if spec is not None else 0
        published = self.published.publication if self.published is not None else Publication(generation=0)
        lag_total, lag_max = _active_lag(published, state.results)
        degraded = state.degraded or self._degraded(state)
        self._update_gauges(published, state)
        self._journal_scrape(published, state, lag_total)
        leaving = self._leaving(state, spec)
        status = build_status(
            StatusInput(
                app=self.app.name,
                observed_generation=int((seen.body.get("metadata") or {}).get("generation") or 0),
                replicas=spec.replicas if spec is not None else 0,
                tasks=spec_tasks,
                pods=state.pods,
                published=published,
                plan=self._plan_outcome(),
                settled=self._settled(),
                leaving=leaving,
                lag_total=lag_total,
                lag_max_task=lag_max,
                degraded=degraded,
                invalid_spec=Problem("SpecInvalid", "; ".join(state.problems)) if state.problems else None,
                previous=self._previous_status(seen.body),
                now=state.now,
            )
        )
        body = status.model_dump(mode="json", by_alias=True)
        if body != self.status:
            path = group_path(
                resource_names.API_VERSION, self.app.namespace, resource_names.PLURAL, self.app.name, "status"
            )
            await self.ctx.api.patch(path, {"status": body})
            self.status = body

    def _degraded(self, state: _Round) -> Problem | None:
        if self.unreadable is not None:
            return Problem(
                "AssignmentUnreadable", f"the assignment ConfigMap cannot be read: {self.unreadable}"
            )
        failed = sorted(f"{pod} ({r.reason})" for pod, r in state.failures.items())
        if failed:
            return Problem("MetricsUnavailable", f"no metrics from {', '.join(failed)}")
        return None

    def _plan_outcome(self) -> PlanOutcome | None:
        memory = self.memory
        if memory is None:
            return None
        followup = memory.plan.followup
        return PlanOutcome(
            stable=memory.plan.stable,
            stats=memory.plan.stats,
            next_probe=memory.next_probe,
            probe_reason=followup.reason if followup is not None else None,
        )

    def _leaving(self, state: _Round, spec: StreamsAppSpec | None) -> list[Leaving]:
        timeout = planner_config(spec).scale_down_timeout_seconds if spec is not None else None
        out = []
        for pod in state.pods:
            since = _leaving_time(pod)
            if since is None or pod.deleting:
                continue
            deadline = since + timedelta(seconds=timeout) if timeout is not None else None
            out.append(Leaving(pod.name, since, deadline))
        return out

    def _previous_status(self, body: Mapping[str, Any]) -> StreamsAppStatus | None:
        raw = self.status if self.status is not None else body.get("status")
        if not raw:
            return None
        try:
            return StreamsAppStatus.model_validate(raw)
        except ValidationError:
            return None

    def _update_gauges(self, published: Publication, state: _Round) -> None:
        labels = (self.app.namespace, self.app.name)
        metrics = self.ctx.metrics
        metrics.generation.labels(*labels).set(published.generation)
        metrics.warmups.labels(*labels).set(sum(len(a.warmup) for a in published.assignment.values()))
        metrics.handovers.labels(*labels).set(len(published.revoking))
        metrics.pods_leaving.labels(*labels).set(
            sum(1 for p in state.pods if p.is_leaving and not p.deleting)
        )

    def _journal_scrape(self, published: Publication, state: _Round, lag_total: int) -> None:
        """A scrape summary whenever something is in motion or failing; steady states stay quiet."""
        failures = {pod: str(r.reason) for pod, r in state.failures.items()}
        warmups = [
            {"task": task, "pod": pod, "lag": r.lags.get(task)}
            for pod, roles in published.assignment.items()
            for task in roles.warmup
            if isinstance(r := state.results.get(pod), PodMetrics)
        ]
        if not (failures or warmups or published.revoking):
            return
        self._journal(
            "scrape", pods=len(state.results), failures=failures, lagTotal=lag_total, warmupLags=warmups
        )

    # -- plumbing --------------------------------------------------------------------------------------

    def _journal(self, kind: str, **fields: Any) -> None:
        generation = self.published.publication.generation if self.published is not None else 0
        self.ctx.journal.record(kind, self.app, generation, **fields)

    def _post(self, events: Sequence[ev.AppEvent]) -> None:
        for event in events:
            self.ctx.post_event(self.app, event)

    def failed(self) -> None:
        self.ctx.metrics.reconcile_errors.labels(self.app.namespace, self.app.name).inc()

    def next_probe(self) -> datetime | None:
        return self.memory.next_probe if self.memory is not None else None

    def forget(self) -> None:
        self.ctx.metrics.forget(self.app)


def _leaving_time(pod: PodInfo) -> datetime | None:
    return leaving_since(pod) if pod.is_leaving else None


def _active_lag(published: Publication, results: Mapping[str, ScrapeResult]) -> tuple[int, int]:
    """The sum and the largest of the active tasks' lags, as their owners report them."""
    lags: list[int] = []
    for pod, roles in published.assignment.items():
        result = results.get(pod)
        if isinstance(result, PodMetrics):
            lags.extend(result.lags.get(task, 0) for task in roles.active)
    return sum(lags), max(lags, default=0)
