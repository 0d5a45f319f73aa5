"""One reconciliation of one app: observe, decide with the pure modules, act, report.

The order matters for safety:

1. read the spec (an invalid one freezes the pod set and planning; hand-overs already decided go on), and
   list the pods from the API server (never a cache: a pod missing from a cache is not a pod that is gone);
2. scrape every pod (lags, changelog end offsets, acknowledged generations);
3. the pod set (`scaling`, carried out by `podactions`): stamp, mark or take back leaving pods, delete
   retired, stopped or restarting pods, create missing ones (a name is reused only once no generation
   names it);
4. plan, when `probing` says so and no holder's metrics are missing;
5. hand over: publish the next generation toward the plan (`next_publication`), conditional on the
   ConfigMap's resourceVersion;
6. report (`reporting`): status, Events, metrics, journal.

Between rounds, while a hand-over waits for old owners to acknowledge a revocation, `poll_handover` scrapes
only those pods and takes step 5 again as soon as they have: a moved task starts on its new pod a poll
interval after its old pod stopped it, not at the next round.

All memory kept between rounds is a cache or a debounce: the published generation is re-read from the
ConfigMap after a restart (or a conflicting write), leaving times live in the pods' annotations, and a
restarted operator plans afresh from what it observes.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from smoothscale.assignor.handover import EMPTY, Publication
from smoothscale.assignor.planner import plan as make_plan

from .appref import AppRef
from .context import OperatorContext
from .control import events as ev
from .control import names
from .control.appreport import AppReport, observe_app_report, report_problems
from .control.autoscale import ScaleDownHold, recommended_replicas, staying_current
from .control.observed import PodMetrics, ScrapeFailure, ScrapeResult
from .control.planning import PlanningInput, decide_planning
from .control.pods import PodInfo, pod_info
from .control.probing import PlanMemory, fingerprint, holders, settled
from .control.publishing import awaited_owners, handover_poll_delay, next_generation
from .control.rates import ProcessRates, owner_rates
from .control.scaling import PodSetInput, as_planned, plan_pod_set
from .control.snapshot import build_snapshot, changelog_sizes, merge_end_offsets, observed_clients, task_ids
from .control.status import (
    KafkaOutcome,
    PlanOutcome,
    Problem,
    StatusInput,
    active_lag,
    build_status,
    degraded,
    leaving_pods,
)
from .kafka.observer import KafkaObserver
from .kube import KubeError, core_path
from .podactions import PodSetActions
from .podset import template_revision
from .publish import AssignmentUnreadableError, Published, load_published, publish
from .reporting import AppReporter
from .resource import InvalidSpecError, MetricNames, Runtime, StreamsAppSpec, load_spec, planner_config
from .resource.durations import parse_duration
from .scrape import metrics_url


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
    status_generation: int = 0
    """The generation the app's status last reported as published."""
    failures: dict[str, ScrapeFailure] = field(default_factory=dict)
    held_for: tuple[str, ...] = ()
    """Pods holding tasks whose missing metrics held planning this round."""


@dataclass
class _HandOverWait:
    """What `poll_handover` needs from the last round: the live pods, the generations they acknowledged
    (updated by the polls), their metrics URLs; and when the last generation was published."""

    alive: set[str] = field(default_factory=set)
    acked: dict[str, int] = field(default_factory=dict)
    urls: dict[str, str] = field(default_factory=dict)
    names: MetricNames | None = None
    status_generation: int = 0
    max_warmups: int | None = None
    """The spec's maxWarmupReplicas: no generation lists more warmups."""
    published_at: datetime | None = None
    polls: int = 0
    """Pods polled since the last publication."""
    kafka_rebalances: bool = False
    """The pods run Kafka Streams (`spec.runtime`): Kafka's rebalance hands tasks over."""

    def awaited(self, published: Publication) -> set[str]:
        """The pods a pending hand-over waits on that can be polled (they have a metrics URL)."""
        return awaited_owners(published, self.acked, self.alive) & set(self.urls)


class AppReconciler:
    def __init__(self, app: AppRef, context: OperatorContext) -> None:
        self.app = app
        self.ctx = context
        self.report = AppReporter(app, context, lambda: self.publication.generation)
        self.actions = PodSetActions(app, context.api, self.report)
        self.published: Published | None = None
        self.unreadable: str | None = None
        self.memory: PlanMemory | None = None
        self.last_good: StreamsAppSpec | None = None
        self.problems: list[str] | None = None
        self.end_offsets: dict[str, int] = {}
        self.process_rates = ProcessRates()
        self.kafka = KafkaObserver(app, context.api, context.clock)
        self.planned_racks: dict[str, list[list[str]]] = {}
        self.scale_down_hold = ScaleDownHold()
        self.failing: set[str] = set()
        self.app_report = AppReport()
        self.known_pods: set[str] = set()
        self.deleted_by_us: set[str] = set()
        self.started_at = context.clock()
        self.loaded_at = self.started_at
        self.recheck = timedelta(seconds=context.config.assignment_recheck)
        self.waits = _HandOverWait()

    @property
    def publication(self) -> Publication:
        """The generation in force (an empty generation 0 until the ConfigMap has been read)."""
        return self.published.publication if self.published is not None else EMPTY

    # -- the round -------------------------------------------------------------------------------------

    async def reconcile(self, seen: Observation) -> None:
        now = self.ctx.clock()
        spec, problems = self._read_spec(seen.body)
        pods = await self._list_pods()
        self._report_lost(pods)
        if self.published is None or now - self.loaded_at >= self.recheck:
            await self._load(now)
        working_spec = spec or self.last_good
        self.report.post(self.kafka.poll(working_spec))
        results = await self._scrape(pods, working_spec) if working_spec is not None else {}
        reported = ((seen.body.get("status") or {}).get("assignment") or {}).get("generation")
        state = _Round(now, spec, problems, pods, results, status_generation=int(reported or 0))
        self._note_scrape(state)
        if self.published is not None:
            if spec is not None:
                state.pods = await self._apply_pod_set(spec, state)
                await self._maybe_plan(spec, seen, state)
            if working_spec is not None:
                await self._hand_over(state)
        await self._write_status(seen, state)

    def failed(self) -> None:
        self.report.failed()

    def next_probe(self) -> datetime | None:
        return self.memory.next_probe if self.memory is not None else None

    def forget(self) -> None:
        self.kafka.close()
        self.report.forget()

    # -- observation -----------------------------------------------------------------------------------

    def _read_spec(self, body: Mapping[str, Any]) -> tuple[StreamsAppSpec | None, list[str] | None]:
        try:
            spec: StreamsAppSpec | None = load_spec(body.get("spec") or {})
            problems: list[str] | None = None
        except InvalidSpecError as error:
            spec, problems = None, list(error.problems)
        if spec is not None:
            self.last_good = spec
        if problems != self.problems:
            self.report.post(ev.spec_events(self.problems, problems))
            self.report.journal("spec", valid=problems is None, problems=problems or [])
            self.problems = problems
        return spec, problems

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

    async def _load(self, now: datetime) -> None:
        """Read the publication in force: after a restart, a conflicting write, and every `recheck` (a
        ConfigMap someone deleted is noticed, and rebuilt behind a barrier). An unreadable one blocks every
        write until it is fixed."""
        try:
            self.published = await load_published(self.ctx.api, self.app)
            self.unreadable = None
        except AssignmentUnreadableError as error:
            self.published, self.unreadable = None, str(error)
        self.loaded_at = now

    def _report_lost(self, pods: Sequence[PodInfo]) -> None:
        present = {p.name for p in pods}
        gone = self.known_pods - present
        lost = gone - self.deleted_by_us
        self.deleted_by_us -= gone
        self.report.post(ev.lost_pod_events(lost))
        for pod in sorted(lost):
            self.report.scaling("lost", pod, "PodLost")
        self.known_pods = present

    async def _scrape(self, pods: Sequence[PodInfo], spec: StreamsAppSpec) -> dict[str, ScrapeResult]:
        """Every running pod with an address (a pod without one has not started: nothing to ask)."""
        urls = {
            p.name: url
            for p in pods
            if p.alive and not p.deleting and (url := metrics_url(p, spec.metrics)) is not None
        }
        self.waits.urls, self.waits.names = urls, spec.metrics.names
        return await self.ctx.scraper.scrape_all(urls, spec.metrics.names)

    def _note_scrape(self, state: _Round) -> None:
        """Failures that matter (a ready pod, or one holding tasks; a pod still starting up is excused), the
        Events when a pod starts or stops failing, the journal's scrape record, the changelog lengths seen and
        the processing rates."""
        holding = holders(self.publication)
        ready = {p.name for p in state.pods if p.ready}
        state.failures = {
            pod: r
            for pod, r in state.results.items()
            if isinstance(r, ScrapeFailure) and (pod in ready or pod in holding)
        }
        self.report.post(ev.scrape_events(self.failing, state.failures, state.results))
        self.failing = set(state.failures)
        self.app_report, reported = observe_app_report(
            self.app_report, state.results, state.spec or self.last_good, state.now
        )
        self.report.post(reported)
        # Journaled now, under the generation the lags were scraped for: once this round has published the
        # next one, the warmups that just caught up (and moved) would be missing from the record.
        self.report.scrape(
            self.publication, state.results, state.failures, active_lag(self.publication, state.results)[0]
        )
        reports = [r.end_offsets for r in state.results.values() if isinstance(r, PodMetrics)]
        self.end_offsets = merge_end_offsets(self.end_offsets, reports)
        self.process_rates.observe(owner_rates(state.results, self.publication), state.now)

    # -- pod set ---------------------------------------------------------------------------------------

    async def _apply_pod_set(self, spec: StreamsAppSpec, state: _Round) -> list[PodInfo]:
        """Decide and carry out the pod-set steps; returns the pods as planning must see them this round."""
        revision = template_revision(spec)
        storage = spec.storage
        decided = plan_pod_set(
            PodSetInput(
                app=self.app.name,
                replicas=self._replicas(spec, revision, state),
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
        if not decided.empty:
            self.report.post(ev.pod_set_events(decided, self.app.name))
            self.deleted_by_us |= await self.actions.apply(decided, spec, revision, state.now)
        return as_planned(state.pods, decided, state.now)

    def _replicas(self, spec: StreamsAppSpec, revision: str, state: _Round) -> int:
        """`spec.replicas`, or the pods that stay now while the stabilisation window holds a scale-down."""
        window = spec.scaling.scale_down_stabilization
        warming = any(roles.warmup for roles in self.publication.assignment.values())
        return self.scale_down_hold.replicas(
            spec.replicas,
            staying_current(state.pods, revision),
            warming,
            None if window is None else timedelta(seconds=parse_duration(window)),
            state.now,
        )

    # -- planning --------------------------------------------------------------------------------------

    async def _maybe_plan(self, spec: StreamsAppSpec, seen: Observation, state: _Round) -> None:
        clients = observed_clients(state.pods, state.results, seen.zones, holders(self.publication))
        generation = int((seen.body.get("metadata") or {}).get("generation") or 0)
        decision = decide_planning(
            PlanningInput(
                memory=self.memory,
                spec_generation=generation,
                clients=clients,
                published=self.publication,
                reported=[pod for pod, r in state.results.items() if isinstance(r, PodMetrics)],
                staying=[p.name for p in state.pods if not (p.is_leaving or p.deleting or p.stopped)],
                acceptable_recovery_lag=spec.assignment.acceptable_recovery_lag,
                catch_up_trigger=spec.assignment.catch_up_trigger,
                now=state.now,
                waited=(state.now - self.started_at).total_seconds(),
                startup_grace=self.ctx.config.startup_grace,
                racks_changed=self.kafka.facts.racks != self.planned_racks,
                waiting_for_kafka=self.kafka.first_read_pending,
            )
        )
        state.held_for = decision.held_for
        if decision.held_for:
            self.report.journal("plan-held", reason=str(decision.due), pods=list(decision.held_for))
        if not decision.plan:
            return
        started = time.perf_counter()
        rates = self.process_rates.means()
        end_offsets = changelog_sizes(self.end_offsets, self.kafka.facts.changelog_offsets)
        racks = self.kafka.facts.racks
        snapshot = build_snapshot(spec, state.now, clients, self.publication, end_offsets, rates, racks)
        result = await asyncio.to_thread(make_plan, snapshot)
        duration = time.perf_counter() - started
        before = self.memory.plan.rack_unknown if self.memory is not None else None
        self.memory = PlanMemory(generation, fingerprint(clients), state.now, result)
        self.planned_racks = racks
        self.report.plan(str(decision.due), result, duration, len(clients), len(snapshot.tasks))
        self.report.post(ev.rack_events(before, result.rack_unknown))

    def _settled(self) -> bool:
        return settled(self.memory, self.publication)

    # -- hand-over -------------------------------------------------------------------------------------

    async def _hand_over(self, state: _Round) -> None:
        waits = self.waits
        waits.alive = {p.name for p in state.pods if p.alive}
        waits.acked = {
            pod: r.generation
            for pod, r in state.results.items()
            if isinstance(r, PodMetrics) and r.generation is not None
        }
        waits.status_generation = state.status_generation
        if state.spec is not None:
            waits.kafka_rebalances = state.spec.runtime is Runtime.KAFKA_STREAMS
            waits.max_warmups = state.spec.assignment.max_warmup_replicas
        if waits.published_at is None:
            waits.published_at = state.now  # a hand-over found in the ConfigMap (a restart): polls start now
        await self._publish_next()

    def handover_poll_delay(self) -> float | None:
        """Seconds until `poll_handover` should run, or None while no hand-over waits on a pod it can ask."""
        waits = self.waits
        if waits.published_at is None or not waits.awaited(self.publication):
            return None
        waited = (self.ctx.clock() - waits.published_at).total_seconds()
        config = self.ctx.config
        return handover_poll_delay(waited, config.handover_poll, config.scrape_interval)

    async def poll_handover(self) -> None:
        """Between rounds: scrape the pods a pending hand-over waits on (and only those), and publish the next
        generation once one of them has acknowledged its revocation. Pods and the other pods' generations are
        the last round's: a pod gone since then is still waited for (safe), never taken for gone."""
        waits = self.waits
        awaited = waits.awaited(self.publication)
        if not awaited or waits.names is None:
            return
        results = await self.ctx.scraper.scrape_all({pod: waits.urls[pod] for pod in awaited}, waits.names)
        waits.polls += len(results)
        self.ctx.metrics.handover_polls.labels(self.app.namespace, self.app.name).inc(len(results))
        for pod, result in results.items():
            if isinstance(result, PodMetrics) and result.generation is not None:
                waits.acked[pod] = result.generation
        acknowledged = awaited - waits.awaited(self.publication)
        if acknowledged:
            self.report.journal("handover-poll", pods=sorted(acknowledged), polls=waits.polls)
            await self._publish_next()

    async def _publish_next(self) -> None:
        published = self.published
        if published is None:
            return
        waits = self.waits
        desired = self.memory.desired if self.memory is not None else None
        candidate = next_generation(
            published.publication,
            desired,
            waits.acked,
            waits.alive,
            waits.status_generation,
            ready=set(waits.acked),  # a pod that reports a generation follows the assignment
            kafka_rebalances=waits.kafka_rebalances,
            max_warmups=waits.max_warmups,
        )
        if candidate is None:
            return
        try:
            self.published = await publish(self.ctx.api, self.app, published, candidate)
        except KubeError as error:
            if error.conflict or error.not_found:
                self.published = None  # someone else wrote or deleted it: read it again next round
            raise
        waits.published_at, waits.polls = self.ctx.clock(), 0
        self.report.publication(published.publication, candidate, desired or {})

    # -- status ----------------------------------------------------------------------------------------

    async def _write_status(self, seen: Observation, state: _Round) -> None:
        spec = state.spec or self.last_good
        published = self.publication
        lag_total, lag_max = active_lag(published, state.results)
        self.report.gauges(published, state.pods)
        timeout = planner_config(spec).scale_down_timeout_seconds if spec is not None else None
        fallback, topology, topology_mismatch = report_problems(self.app_report, state.now)
        status = build_status(
            StatusInput(
                app=self.app.name,
                observed_generation=int((seen.body.get("metadata") or {}).get("generation") or 0),
                replicas=spec.replicas if spec is not None else 0,
                tasks=len(task_ids(spec)) if spec is not None else 0,
                pods=state.pods,
                published=published,
                plan=self._plan_outcome(),
                settled=self._settled(),
                leaving=leaving_pods(state.pods, timeout),
                lag_total=lag_total,
                lag_max_task=lag_max,
                recommended_replicas=recommended_replicas(
                    self.process_rates.means(), published, lag_total, len(task_ids(spec)) if spec else 0
                ),
                degraded=degraded(
                    held_for=state.held_for, unreadable=self.unreadable, failures=state.failures
                ),
                invalid_spec=Problem("SpecInvalid", "; ".join(state.problems)) if state.problems else None,
                kafka=self._kafka_outcome(spec),
                fallback=fallback,
                topology=topology,
                topology_mismatch=topology_mismatch,
                previous=self.report.previous_status(seen.body),
                now=state.now,
            )
        )
        await self.report.write_status(status, state.now)

    def _kafka_outcome(self, spec: StreamsAppSpec | None) -> KafkaOutcome | None:
        if spec is None or spec.kafka is None:
            return None
        failed = self.kafka.problem
        problem = Problem(failed.reason, failed.message) if failed is not None else None
        return KafkaOutcome(problem, self.kafka.read_once, self.kafka.facts.status)

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
            rack_unknown=memory.plan.rack_unknown,
        )
