"""What one app's reconciliations tell the world: journal records, Events, the operator's metrics, and the
status written back to the app (Contract 2).

The reconciler decides; this module only records. Status writes are skipped when nothing changed, and a
change of the lag figures alone is written at most every `LAG_REFRESH_SECONDS`: lags move with every scrape,
and a status write per app per scrape would be most of the operator's load on the API server.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from datetime import datetime, timedelta
from typing import Any, Final

from smoothscale.assignor.models import Plan
from smoothscale.contract.publication import ClientAssignment, Publication
from smoothscale.control import events as ev
from smoothscale.control.observed import PodMetrics, ScrapeFailure, ScrapeResult
from smoothscale.control.pods import PodInfo
from smoothscale.resource import StreamsAppStatus, api_kind

from .appref import AppRef
from .context import OperatorContext
from .kube import group_path

LAG_REFRESH_SECONDS: Final = 30.0


class AppReporter:
    def __init__(self, app: AppRef, context: OperatorContext, generation: Callable[[], int]) -> None:
        self.app = app
        self.ctx = context
        self._generation = generation
        self._labels = (app.namespace, app.name)
        self._status_model: StreamsAppStatus | None = None
        self._status_written: datetime | None = None
        self._status_unchanged: StreamsAppStatus | None = None
        """The last status found equal to the one written (a steady app's rounds repeat the same value)."""
        self._gauges: tuple[int, int, int, int] | None = None
        self._revoked_at: dict[str, datetime] = {}
        """When each task being revoked was (the hand-over's pause, revocation to new owner, is a metric)."""
        self._gauged: tuple[Publication, Sequence[PodInfo]] | None = None
        """The publication and pods the gauges were last computed from (a steady round repeats both)."""

    # -- journal and events ----------------------------------------------------------------------------

    def journal(self, kind: str, **fields: Any) -> None:
        self.ctx.journal.record(kind, self.app, self._generation(), **fields)

    def post(self, events: Sequence[ev.AppEvent]) -> None:
        for event in events:
            self.ctx.post_event(self.app, event)

    def scaling(self, step: str, pod: str, reason: str) -> None:
        self.journal("scaling", step=step, pod=pod, reason=reason)

    def plan(self, trigger: str, result: Plan, duration: float, clients: int, tasks: int) -> None:
        self.ctx.metrics.plan_duration.labels(*self._labels).observe(duration)
        self.ctx.metrics.plans.labels(*self._labels, str(result.stable).lower()).inc()
        followup = result.followup.model_dump(by_alias=True) if result.followup is not None else None
        self.journal(
            "plan",
            reason=trigger,
            stable=result.stable,
            durationSeconds=round(duration, 6),
            stats=result.stats.model_dump(by_alias=True),
            followup=followup,
            warmups=[{"task": t, "pod": p} for p, a in result.assignment.items() for t in a.warmup],
            clients=clients,
            tasks=tasks,
        )

    def publication(
        self, before: Publication, after: Publication, desired: Mapping[str, ClientAssignment]
    ) -> None:
        """A new generation: its Event, a `handover` record per step taken, and the `publication` record."""
        event = ev.publication_event(before, after)
        self.post([event])
        self.ctx.metrics.publications.labels(*self._labels).inc()
        now = self.ctx.clock()
        for task in sorted(set(after.revoking) - set(before.revoking)):
            target = next((pod for pod, roles in desired.items() if task in roles.active), None)
            self._handover(task, "revoked", after.revoking[task].owner, target)
            self._revoked_at[task] = now
        owners = after.active_owner()
        moves = []
        for task, revocation in sorted(before.revoking.items()):
            if task in owners:
                moves.append({"task": task, "from": revocation.owner, "to": owners[task]})
                self._handover(task, "completed", revocation.owner, owners[task])
                revoked = self._revoked_at.pop(task, None)
                if revoked is not None:
                    pause = (now - revoked).total_seconds()
                    self.ctx.metrics.handover_pause.labels(*self._labels).observe(pause)
        self.journal(
            "publication",
            reason=event.reason,
            revoking={t: r.model_dump(by_alias=True) for t, r in after.revoking.items()},
            active=sum(len(a.active) for a in after.assignment.values()),
            standby=sum(len(a.standby) for a in after.assignment.values()),
            warmup=sum(len(a.warmup) for a in after.assignment.values()),
            moves=moves,
        )

    def _handover(self, task: str, step: str, source: str, target: str | None) -> None:
        self.journal("handover", task=task, step=step, **{"from": source, "to": target})

    def scrape(
        self,
        published: Publication,
        results: Mapping[str, ScrapeResult],
        failures: Mapping[str, ScrapeFailure],
        lag_total: int,
    ) -> None:
        """Failures counted; a scrape record whenever something is in motion or failing (steady states
        stay quiet)."""
        for failure in failures.values():
            self.ctx.metrics.scrape_failures.labels(*self._labels, failure.reason).inc()
        warmups = [
            {"task": task, "pod": pod, "lag": r.lags.get(task)}
            for pod, roles in published.assignment.items()
            for task in roles.warmup
            if isinstance(r := results.get(pod), PodMetrics)
        ]
        if not (failures or warmups or published.revoking):
            return
        reasons = {pod: str(f.reason) for pod, f in failures.items()}
        self.journal("scrape", pods=len(results), failures=reasons, lagTotal=lag_total, warmupLags=warmups)

    # -- metrics ---------------------------------------------------------------------------------------

    def gauges(self, published: Publication, pods: Sequence[PodInfo]) -> None:
        """The app's gauges, set when one of them changed (looking up four labelled series every round
        was a thirtieth of a steady operator's CPU); not even computed when the publication and the pods are
        the very ones of the last call."""
        gauged = self._gauged
        if gauged is not None and gauged[0] is published and gauged[1] is pods:
            return
        self._gauged = (published, pods)
        warmups = sum(len(a.warmup) for a in published.assignment.values())
        leaving = sum(1 for p in pods if p.is_leaving and not p.deleting)
        values = (published.generation, warmups, len(published.revoking), leaving)
        if values == self._gauges:
            return
        metrics = self.ctx.metrics
        metrics.generation.labels(*self._labels).set(values[0])
        metrics.warmups.labels(*self._labels).set(values[1])
        metrics.handovers.labels(*self._labels).set(values[2])
        metrics.pods_leaving.labels(*self._labels).set(values[3])
        self._gauges = values

    def failed(self) -> None:
        self.ctx.metrics.reconcile_errors.labels(*self._labels).inc()

    def forget(self) -> None:
        self.ctx.metrics.forget(self.app)
        self._gauges = self._gauged = None

    # -- status ----------------------------------------------------------------------------------------

    def previous_status(self, body: Mapping[str, Any]) -> StreamsAppStatus | None:
        """The status last written (or found on the object): conditions keep their transition times."""
        if self._status_model is not None:
            return self._status_model  # what this operator wrote: no need to validate it again each round
        raw = body.get("status")
        if not raw:
            return None
        try:
            return StreamsAppStatus.model_validate(raw)
        except ValueError:
            return None

    async def write_status(self, status: StreamsAppStatus, now: datetime) -> None:
        if not self._due(status, now):
            return
        path = group_path(api_kind.API_VERSION, self.app.namespace, api_kind.PLURAL, self.app.name, "status")
        await self.ctx.api.patch(path, {"status": status.model_dump(mode="json", by_alias=True)})
        self._status_model, self._status_written, self._status_unchanged = status, now, None

    def _due(self, status: StreamsAppStatus, now: datetime) -> bool:
        """Compared as models, not as the JSON written: most rounds change nothing, and dumping every
        round's status only to find it equal was a twentieth of a steady operator's CPU. (Equal models
        write equal JSON; the conditions keep their transition times when unchanged.) A steady app's rounds
        repeat one status value: once found equal, it is recognised by identity."""
        old = self._status_model
        if old is None or self._status_written is None:
            return True
        if status is old or status is self._status_unchanged:
            return False
        if status == old:
            self._status_unchanged = status
            return False
        if status.model_copy(update={"lag": old.lag}) != old:
            return True
        return now - self._status_written >= timedelta(seconds=LAG_REFRESH_SECONDS)
