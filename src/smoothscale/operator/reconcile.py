"""One reconciliation of one app: observe, step, act, report.

1. observe: the spec, the app's pods (listed from the API server, never from a watch cache: a pod missing
   from a cache is not a pod that is gone; the last list is reused while no watch event about the app's pods
   has arrived since it was sent and the operator has changed none of them, for at most `pods_recheck`), the
   nodes' zones, every running pod's metrics, Kafka's facts, and the publication in force (re-read after a
   restart, a conflicting write, and every `assignment_recheck`);
2. step: `control.step.step` decides everything (pod set, planning, the next generation, status, Events,
   journal records) from that observation and the app's one memory value, and returns the next memory; the
   planner runs in a thread, so the event loop goes on serving the other apps;
3. act: the pod-set steps (`podactions`), then the next generation, written conditionally on the
   ConfigMap's resourceVersion;
4. report (`reporting`): Events, journal, metrics, status.

Between rounds, while a hand-over waits for old owners to acknowledge a revocation, `poll_handover` scrapes
only those pods and publishes the next generation as soon as they have (`control.step.poll`, on the
hand-over's `control.handover.HandOverWait`): a moved task starts on its new pod a poll interval after its
old pod stopped it, not at the next round.

What the reconciler keeps between rounds: the app's one memory value (`control.step.RoundMemory`, every
decision's state, replaced by each step, poll and publication), and what the API server holds, as last read
(`ConfigMapRead`: the publication in force with its resourceVersion, or why it is unreadable; a cache of I/O
that decides nothing: the step is given what it holds), the parse of the spec as last read (`_SpecRead`,
a cache of `load_spec`), and the pods as last listed (`_PodsRead`).
"""

from __future__ import annotations

import asyncio
import copy
import time
from collections.abc import Mapping
from dataclasses import dataclass, replace
from datetime import datetime, timedelta
from typing import Any

from smoothscale.assignor.planner import plan as make_plan
from smoothscale.contract.configmap import CorruptAssignment
from smoothscale.contract.publication import EMPTY, Publication
from smoothscale.control import object_names, scrapecadence
from smoothscale.control import step as control_step
from smoothscale.control.events import AppEvent, EventType
from smoothscale.control.exposition import scrape_targets
from smoothscale.control.failover import Failover
from smoothscale.control.observed import PodMetrics, ScrapeResult
from smoothscale.control.pods import PodInfo, pod_info
from smoothscale.control.status import Problem
from smoothscale.control.step import Decisions, KafkaView, Observation, RoundMemory, initial_memory
from smoothscale.resource import (
    GroupProtocol,
    InvalidSpecError,
    MetricsSpec,
    StreamsAppSpec,
    load_spec,
    template_revision,
)

from .appref import AppRef
from .autoscaling import AppAutoscaling
from .context import OperatorContext
from .disruption import BudgetKeeper
from .kafka import streamsgroup
from .kafka.observer import KafkaObserver
from .kube import KubeError, core_path
from .leases import AppLeases, pod_lease_seconds
from .podactions import PodSetActions
from .publish import Published, load_published, publish
from .reporting import AppReporter
from .retention import ClaimOwnership
from .roundmetrics import RoundMetrics


@dataclass(frozen=True)
class AppObject:
    """What kopf knows about an app right now: its object, and the nodes' zones (from kopf's index)."""

    body: Mapping[str, Any]
    zones: Mapping[str, str]


@dataclass(frozen=True)
class ConfigMapRead:
    """The assignment ConfigMap as last read or written: the publication in force (with the resourceVersion
    a write is conditional on), or why it could not be read (every write waits until it is fixed), and when
    it was read (it is read again every `assignment_recheck`, after a restart and after a conflict)."""

    at: datetime
    published: Published | None = None
    unreadable: str | None = None


@dataclass(frozen=True)
class _SpecRead:
    """The object's spec as last read, and what it parsed to."""

    raw: Mapping[str, Any]
    spec: StreamsAppSpec | None
    problems: tuple[str, ...] | None
    revision: str


@dataclass(frozen=True)
class _PodsRead:
    """The app's pods as last listed, how many watch events about them had arrived when the list was sent,
    and when; and the lease each was created with (the pods that renew one, `leases.pod_lease_seconds`)."""

    pods: tuple[PodInfo, ...]
    events: int
    at: datetime
    leases: Mapping[str, int]


class AppReconciler:
    def __init__(self, app: AppRef, context: OperatorContext) -> None:
        self.app = app
        self.ctx = context
        self.report = AppReporter(app, context, lambda: self.publication.generation)
        self.round_metrics = RoundMetrics(context.metrics, app)
        self.actions = PodSetActions(app, context.api, self.report)
        self.claims = ClaimOwnership(app, context.api)
        self.budget = BudgetKeeper(app, context.api, timedelta(seconds=context.config.assignment_recheck))
        self.kafka = KafkaObserver(app, context.api, context.clock)
        self.leases = AppLeases(app, context.api)
        self.autoscaling = AppAutoscaling(app, context, self.report)
        self.config = control_step.operator_round_config(
            context.config.startup_grace, context.config.scrape_interval
        )
        self.round_config = self.config
        """This round's: the operator's, with the app's lease when it has one (`_failover`)."""
        self.recheck = timedelta(seconds=context.config.assignment_recheck)
        self.memory = initial_memory(context.clock())
        self.pods_recheck = timedelta(seconds=context.config.pods_recheck)
        self.configmap: ConfigMapRead | None = None
        self._spec_read: _SpecRead | None = None
        self._pod_events = 0
        self._pods_read: _PodsRead | None = None
        self._last: control_step.Stepped | None = None
        """The last step, while the memory is the one it left (a poll or a publication replaces it)."""
        self.cadence = scrapecadence.ScrapeCadence(
            context.config.scrape_interval, context.config.steady_scrape_interval
        )
        self._reads: Mapping[str, ScrapeResult] = {}
        self._read_at: Mapping[str, float] = {}

    @property
    def published(self) -> Published | None:
        return self.configmap.published if self.configmap is not None else None

    @property
    def publication(self) -> Publication:
        """The generation in force (an empty generation 0 until the ConfigMap has been read)."""
        published = self.published
        return published.publication if published is not None else EMPTY

    # -- the round -------------------------------------------------------------------------------------

    async def reconcile(self, seen: AppObject) -> None:
        observed = await self._observe(seen)
        last = self._last
        if last is not None and last.repeats(observed):
            # the last step's decisions stand: nothing observed changed and no rule's moment has come
            self.round_metrics.repeated()
            status = await self.autoscaling.round(observed, self.memory, last.decisions)
            if status is not None:
                await self.report.write_status(status, observed.now)
            return
        before = self.memory
        decisions, self.memory, wake_at, observed = await self._step(observed)
        self._last = control_step.Stepped(observed, decisions, wake_at)
        if decisions.publish is not None and not await self._take_leases():
            # a pod renewed its lease before the operator could take it: the round is undone, unreported (it
            # would say the pod's lease expired), and its memory the one `before` the step (which took the pod
            # for gone): the next round steps again, sees the renewal, and the pod is no longer expired
            self.memory = before
            self._last = None
            return
        self._report_decisions(observed, decisions)
        await self._act(observed, decisions)
        self.report.gauges(self.publication, decisions.pods)
        self.round_metrics.round(
            decisions, self.publication, seen.zones, kafka_failed=observed.kafka.problem is not None
        )
        status = await self.autoscaling.round(observed, self.memory, decisions)
        if status is not None:
            await self.report.write_status(status, observed.now)

    async def _step(
        self, observed: Observation
    ) -> tuple[Decisions, RoundMemory, datetime | None, Observation]:
        """The core's step, on the event loop. When it asks for a plan, the planner runs in a thread
        (planning is CPU work: the loop goes on serving the other apps) and the next observation is this one
        with the plan in it (nothing was carried out in between); that step decides the round."""
        decisions, memory, wake_at = control_step.step(self.memory, observed, self.round_config)
        wanted = decisions.plan_wanted
        if wanted is None:
            return decisions, memory, wake_at, observed
        started = time.perf_counter()
        plan = await asyncio.to_thread(make_plan, wanted.snapshot)
        answer = control_step.PlanAnswer(wanted, plan, time.perf_counter() - started)
        observed = replace(observed, plan=answer)
        decisions, memory, wake_at = control_step.step(memory, observed, self.round_config)
        return decisions, memory, wake_at, observed

    def pods_changed(self) -> None:
        """A watch event about one of the app's pods (kopf's `pod_changed`): the next round lists them."""
        self._pod_events += 1

    def failed(self) -> None:
        self._pods_read = None  # a round cut short may have changed pods: list them again
        self._last = None  # and what it decided may not all be done: step again
        self.report.failed()

    def wake_at(self) -> datetime | None:
        """When the last step's first time-based rule may decide otherwise (None: none waits)."""
        return self._last.wake_at if self._last is not None else None

    def next_round_in(self) -> float:
        """Seconds until the next round has something new to read: the scrape interval, or for an app at
        rest the first of its pods' steady reads (`scrapecadence.next_read_in`); for an app with a lease, at
        most a third of it (its Leases are read every round: `failover.LEASE_READS_PER_LEASE`)."""
        last = self._last
        if last is None or not last.decisions.at_rest:
            due = self.cadence.interval
        else:
            due = scrapecadence.next_read_in(self._read_at, time.monotonic(), self.cadence)
        failover = self.round_config.failover
        return due if failover is None else min(due, failover.read_interval)

    def forget(self) -> None:
        self.kafka.close()
        self.report.forget()

    # -- observe ---------------------------------------------------------------------------------------

    async def _observe(self, seen: AppObject) -> Observation:
        now = self.ctx.clock()
        spec, problems, revision = self._read_spec(seen.body.get("spec") or {})
        pods = await self._pods(now)
        read = self.configmap
        if read is None or read.published is None or now - read.at >= self.recheck:
            read = self.configmap = await self._load(now)
        working = control_step.working_spec(self.memory, spec)
        topology = control_step.kafka_topology(self.memory, spec, self.app.name)
        self.report.post(self.kafka.poll(topology, self.publication, self.memory.app_report.topology))
        facts = self.kafka.facts
        urls: Mapping[str, str] = {}
        results: Mapping[str, ScrapeResult] = {}
        if working is not None and _on_streams_protocol(working):
            # the group coordinator knows what the pods would report: read from Kafka, no pod is scraped
            group = facts.streams_group
            if group is not None and group.view is not None:
                results = streamsgroup.pod_results(
                    group.view, self.publication, facts.partitions, facts.changelog_offsets
                )
        elif working is not None:
            urls = scrape_targets(pods, working.metrics)
            often = self._last.read_often(spec, pods) if self._last is not None else None
            results = await self._scrape(urls, working.metrics, often)
        renewals, leased = await self._renewals(working)
        status = seen.body.get("status") or {}
        failed = self.kafka.problem
        return Observation(
            now=now,
            app=self.app.name,
            spec=spec,
            problems=problems,
            spec_generation=int((seen.body.get("metadata") or {}).get("generation") or 0),
            status_generation=int((status.get("assignment") or {}).get("generation") or 0),
            previous_status=self.report.previous_status(seen.body),
            pods=pods,
            zones=seen.zones,
            results=results,
            published=read.published.publication if read.published is not None else None,
            unreadable=read.unreadable,
            revision=revision,
            kafka=KafkaView(
                racks=facts.racks,
                changelog_offsets=facts.changelog_offsets,
                first_read_pending=self.kafka.first_read_pending,
                problem=Problem(failed.reason, failed.message) if failed is not None else None,
                read_once=self.kafka.read_once,
                status=facts.status,
                streams_assignors=facts.streams_assignors,
                unknown_lags=facts.unknown_lags,
            ),
            urls=urls,
            renewals=renewals,
            leased=leased,
        )

    async def _renewals(
        self, working: StreamsAppSpec | None
    ) -> tuple[Mapping[str, str] | None, frozenset[str] | None]:
        """With a lease (the working spec's `failover.leaseSeconds`): the pods' renewals, from one list of the
        app's Leases, and the pods that renew one (created with a lease); this round's config times them by
        the longest of the spec's lease and theirs (a pod created with a longer one than the spec's now still
        counts on it). Without one: nothing is read and nothing fails over."""
        seconds = working.failover.lease_seconds if working is not None else None
        if seconds is None:
            self.round_config = self.config
            return None, None
        created_with = self._pods_read.leases if self._pods_read is not None else {}
        longest = max([seconds, *created_with.values()])
        self.round_config = replace(self.config, failover=Failover(float(longest)))
        return await self.leases.renewals(), frozenset(created_with)

    async def _scrape(
        self, urls: Mapping[str, str], metrics: MetricsSpec, read_often: frozenset[str] | None
    ) -> Mapping[str, ScrapeResult]:
        """Every pod's latest read: the pods due (`scrapecadence`: the ones the last step waits on, the
        others at the steady cadence; None: all of them) read now, the others' last reads kept."""
        clock = time.monotonic()
        due = scrapecadence.due(urls, self._read_at, clock, read_often=read_often, cadence=self.cadence)
        if due or self._reads.keys() != urls.keys():  # a pod gone keeps no read
            fresh = await self.ctx.scraper.scrape_all(
                urls if len(due) == len(urls) else {pod: urls[pod] for pod in due}, metrics.names
            )
            self._reads = {pod: fresh[pod] if pod in due else self._reads[pod] for pod in urls}
            self._read_at = {pod: clock if pod in due else self._read_at[pod] for pod in urls}
        return self._reads

    def _read_spec(self, raw: Mapping[str, Any]) -> tuple[StreamsAppSpec | None, tuple[str, ...] | None, str]:
        """The spec (None when invalid), its problems, its template's revision; parsed again only when the
        object's spec changed (every round validating an unchanged spec was a tenth of a steady round)."""
        cached = self._spec_read
        if cached is not None and cached.raw == raw:
            return cached.spec, cached.problems, cached.revision
        try:
            spec: StreamsAppSpec | None = load_spec(raw)
            problems: tuple[str, ...] | None = None
        except InvalidSpecError as error:
            spec, problems = None, tuple(error.problems)
        revision = template_revision(spec) if spec is not None else ""
        self._spec_read = _SpecRead(copy.deepcopy(raw), spec, problems, revision)
        return spec, problems, revision

    async def _pods(self, now: datetime) -> tuple[PodInfo, ...]:
        """The app's pods: the last list while it is still current, else a new one.

        The hand-over lets a task start elsewhere without waiting when its old owner is gone, so "gone" must
        be a fact: the pods always come from a list of the API server, never from a watch cache (kopf's index
        can miss pods, e.g. the ones created while this replica was paused by peering, and a pod missing from
        it is not a pod that has stopped). A list stays current while no watch event about the app's pods has
        arrived since it was sent (kopf's `pod_changed` counts them: a pod created, changed or deleted by
        anyone sends one) and the operator has changed none of them (`_act` forgets it first), for at most
        `pods_recheck` (a watch that broke unnoticed delays what it missed by that much, no more). A steady
        app's rounds then list nothing: listing every round was a fifth of a steady operator's CPU.
        """
        read = self._pods_read
        if read is not None and read.events == self._pod_events and now - read.at < self.pods_recheck:
            return read.pods  # nothing listed, nothing changed: the round may be skipped (`Stepped.repeats`)
        events = self._pod_events  # an event arriving while the list is under way: listed again next round
        listed = await self._list_pods()
        pods = tuple(pod for pod, _ in listed)
        leases = {pod.name: seconds for pod, seconds in listed if seconds is not None}
        self._pods_read = _PodsRead(pods, events, now, leases)
        return pods

    async def _list_pods(self) -> list[tuple[PodInfo, int | None]]:
        """The app's pods, as the API server lists them now, each with the lease it was created with."""
        selector = object_names.managed_selector(self.app.name)
        listed = await self.ctx.api.get(core_path(self.app.namespace, "pods"), {"labelSelector": selector})
        pods = ((pod_info(item), pod_lease_seconds(item)) for item in listed.get("items") or [])
        return [(p, seconds) for p, seconds in pods if p.ordinal is not None]

    async def _load(self, now: datetime) -> ConfigMapRead:
        """Read the publication in force: after a restart, a conflicting write, and every `recheck` (a
        ConfigMap someone deleted is noticed, and rebuilt behind a barrier). An unreadable one blocks every
        write until it is fixed."""
        try:
            return ConfigMapRead(now, await load_published(self.ctx.api, self.app))
        except CorruptAssignment as error:
            return ConfigMapRead(now, unreadable=str(error))

    # -- act and report --------------------------------------------------------------------------------

    def _report_decisions(self, observed: Observation, decisions: Decisions) -> None:
        """Events and journal records, before acting (once the round may act: an undone round says nothing):
        they say what the round decided, whatever happens next."""
        self.report.post(decisions.events)
        for kind, fields in decisions.journal:
            self.report.journal(kind, **fields)
        for pod in decisions.lost:
            self.report.scaling("lost", pod, "PodLost")
        published = observed.published or EMPTY
        self.report.scrape(published, observed.results, decisions.failures, decisions.scraped_lag)
        planned = decisions.planned
        if planned is not None:
            self.report.plan(planned.trigger, planned.plan, planned.seconds, planned.clients, planned.tasks)

    async def _act(self, observed: Observation, decisions: Decisions) -> None:
        """Carry the round's decisions out (after the take of the Leases that expired, when it publishes):
        the claims, the budget, the pod actions and the generation."""
        spec = observed.spec
        if spec is not None:
            await self.claims.keep(spec.storage)
            await self.budget.keep(spec, observed.now)
        if spec is not None and decisions.pod_set is not None and not decisions.pod_set.empty:
            self._pods_read = None  # the next round lists the pods these actions change
            await self.actions.apply(decisions.pod_set, spec, observed.revision, observed.now)
        if decisions.publish is not None:
            await self._publish(decisions.publish)
        elif (waited := self.leases.waited_for()) > self.publication.generation:
            # a pod whose Lease was taken came back before the take's generation could be published: it
            # resumes only from a newer one, which the plan, unchanged, would not make
            self.report.journal("lease-republish", waitedFor=waited)
            await self._publish(
                self.publication.model_copy(update={"generation": self.publication.generation + 1})
            )

    async def _take_leases(self) -> bool:
        """Before a generation is published: the take of each pod's Lease whose lease expired and that its
        pod may still hold (`leases.AppLeases.take`), conditional on the token the step last saw. False when
        a pod renewed (or recreated its Lease) first: it did not stop, and nothing may be published."""
        expired = self.memory.leases.expired
        failover = self.round_config.failover
        if not expired or failover is None:
            return True
        take = await self.leases.take(
            expired, self.memory.leases.seen, self.publication.generation, round(failover.seconds)
        )
        if take.taken:
            # the record's generation is the one in force: the one the Leases are annotated with
            self.report.journal("lease-taken", pods=list(take.taken))
        if take.kept_by is None:
            return True
        self.report.journal("lease-kept", pod=take.kept_by)
        message = (
            f"{take.kept_by} renewed its lease before the operator took it: its tasks do not fail over, "
            "nothing is published on its expiry"
        )
        self.report.post([AppEvent(EventType.NORMAL, "LeaseKept", message)])
        return False

    # -- hand-over between rounds ----------------------------------------------------------------------

    def handover_poll_delay(self) -> float | None:
        """Seconds until `poll_handover` should run, or None while no hand-over waits on a pod it can ask."""
        config = self.ctx.config
        waits = self.memory.waits
        return waits.poll_delay(
            self.publication, self.ctx.clock(), config.handover_poll, config.scrape_interval
        )

    async def poll_handover(self) -> None:
        """Between rounds: scrape the pods a pending hand-over waits on (and only those); the core decides
        who has acknowledged and what to publish (`control.step.poll`)."""
        waits = self.memory.waits
        awaited = waits.awaited(self.publication)
        spec = self.memory.last_good
        if not awaited or spec is None or self.published is None:
            return
        results = await self.ctx.scraper.scrape_all(
            {pod: waits.urls[pod] for pod in awaited}, spec.metrics.names
        )
        self.ctx.metrics.handover_polls.labels(self.app.namespace, self.app.name).inc(len(results))
        generations = {pod: r.generation if isinstance(r, PodMetrics) else None for pod, r in results.items()}
        polled = control_step.poll(self.memory, self.publication, generations)
        self.memory = polled.memory
        self._last = None  # the memory changed: the next round steps
        if polled.acknowledged:
            self.report.journal(
                "handover-poll", pods=sorted(polled.acknowledged), polls=polled.memory.waits.polls
            )
        if polled.publish is not None:
            await self._publish(polled.publish)

    async def _publish(self, candidate: Publication) -> None:
        read = self.configmap
        if read is None or read.published is None:
            return
        if not await self._take_leases():  # a poll's generation, too, follows the take
            self._last = None
            return
        spec = self.memory.last_good
        if spec is not None and spec.kafka is not None and _on_streams_protocol(spec):
            # the brokers' plugin follows the plan topic; the ConfigMap stays the operator's record of the
            # publication in force (a restarted operator reads it back), written once the brokers have it
            await self.kafka.hand_over(spec.kafka, candidate)
        try:
            self.configmap = replace(
                read, published=await publish(self.ctx.api, self.app, read.published, candidate)
            )
        except KubeError as error:
            if error.conflict or error.not_found:
                self.configmap = None  # someone else wrote or deleted it: read it again next round
            raise
        self.memory = control_step.after_publishing(self.memory, self.ctx.clock())
        self._last = None  # the memory changed: the next round steps
        self.report.publication(read.published.publication, candidate, self.memory.desired or {})


def _on_streams_protocol(spec: StreamsAppSpec) -> bool:
    """The app runs `group.protocol=streams`: Kafka's group coordinator assigns its tasks (KIP-1071)."""
    return spec.kafka is not None and spec.kafka.group_protocol is GroupProtocol.STREAMS
