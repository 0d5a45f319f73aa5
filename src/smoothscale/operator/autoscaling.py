"""`spec.autoscaling.mode: Act` around the control core: observe the app's load, let the autoscaler's pure
decision (`control.autoscaler`) size it, and set `spec.replicas` through the scale subresource, with an
Event and a journal record per decision naming its inputs, and the `Autoscaling` condition.

It refuses to act beside another autoscaler: an HPA (`autoscaling/v2`) or a KEDA ScaledObject
(`keda.sh/v1alpha1`, when KEDA is installed) whose `scaleTargetRef` names the app would fight it over
`spec.replicas`, so the condition turns False naming it (reason `ConflictingAutoscaler`), an Event says
so once, and nothing is set until it is gone. The lookup is repeated every `CONFLICT_RECHECK_SECONDS`.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any, Final

from smoothscale.contract.publication import EMPTY
from smoothscale.control.autoscaler import AutoscalerMemory, Decision, autoscale_policy, decide
from smoothscale.control.events import AppEvent, EventType
from smoothscale.control.loadsignal import LoadSignal
from smoothscale.control.snapshot import changelog_sizes, task_ids
from smoothscale.control.status import stamped
from smoothscale.control.step import Decisions, Observation, RoundMemory
from smoothscale.resource import (
    AutoscalingMode,
    ConditionStatus,
    ConditionType,
    StreamsAppSpec,
    StreamsAppStatus,
    api_kind,
)

from .appref import AppRef
from .context import OperatorContext
from .kube import KubeError, group_path
from .reporting import AppReporter

CONFLICT_RECHECK_SECONDS: Final = 30.0
_HPA = ("autoscaling/v2", "horizontalpodautoscalers", "HorizontalPodAutoscaler")
_KEDA = ("keda.sh/v1alpha1", "scaledobjects", "ScaledObject")


class AppAutoscaling:
    """One app's autoscaler in Act mode: its memory, the load signal, the last conflict lookup."""

    def __init__(self, app: AppRef, context: OperatorContext, report: AppReporter) -> None:
        self.app = app
        self.ctx = context
        self.report = report
        self.memory = AutoscalerMemory()
        self.signal = LoadSignal()
        self._conflict: str | None = None
        self._checked: datetime | None = None
        self._condition: tuple[ConditionStatus, str, str] | None = None

    async def round(
        self, seen: Observation, memory: RoundMemory, decisions: Decisions
    ) -> StreamsAppStatus | None:
        """Decide and act for one round; the round's status with the `Autoscaling` condition (None when
        the round built no status)."""
        spec = seen.spec
        if spec is None or spec.autoscaling.mode is not AutoscalingMode.ACT:
            self.memory, self.signal, self._condition = AutoscalerMemory(), LoadSignal(), None
            return decisions.status
        conflict = await self._conflicting(seen.now)
        if conflict is not None:
            self._set(
                ConditionStatus.FALSE,
                "ConflictingAutoscaler",
                f"{conflict} targets this app: the operator sets no replicas beside another autoscaler; "
                "delete one of the two, or set spec.autoscaling.mode to Recommend",
            )
            return self._stamped(seen, decisions.status)
        decision = self._decide(seen, memory, spec, decisions)
        if decision is not None:
            await self._scale(decision)
            self._set(ConditionStatus.TRUE, str(decision.reason), _message(decision))
        elif self._condition is None or self._condition[0] is not ConditionStatus.TRUE:
            self._set(ConditionStatus.TRUE, "Acting", "the operator sets spec.replicas")
        return self._stamped(seen, decisions.status)

    def _decide(
        self, seen: Observation, memory: RoundMemory, spec: StreamsAppSpec, decisions: Decisions
    ) -> Decision | None:
        stateful = {
            f"{sub.name}_{p}"
            for sub in spec.topology.subtopologies
            if sub.stateful
            for p in range(sub.partitions)
        }
        sizes = changelog_sizes(dict(memory.end_offsets), seen.kafka.changelog_offsets)
        records = {task: sizes.get(task, 0) if task in stateful else 0 for task in task_ids(spec)}
        status = decisions.status
        migrating = status is not None and status.autoscaling is not None and status.autoscaling.migrating
        sample, self.signal = self.signal.sample(
            seen.now.timestamp(),
            spec.replicas,
            seen.results,
            seen.published or EMPTY,
            records,
            spec.assignment.max_warmup_replicas,
            migrating,
        )
        decision, self.memory = decide(self.memory, sample, autoscale_policy(spec.autoscaling, len(records)))
        return decision

    async def _scale(self, decision: Decision) -> None:
        path = group_path(api_kind.API_VERSION, self.app.namespace, api_kind.PLURAL, self.app.name, "scale")
        await self.ctx.api.patch(path, {"spec": {"replicas": decision.replicas}})
        self.report.post([AppEvent(EventType.NORMAL, "AutoscalerScaled", _message(decision))])
        self.report.journal("autoscale", **decision.inputs())

    async def _conflicting(self, now: datetime) -> str | None:
        """`Kind/name` of an HPA or a ScaledObject that targets the app, looked up at most every
        `CONFLICT_RECHECK_SECONDS`; None when there is none."""
        if self._checked is not None and now - self._checked < timedelta(seconds=CONFLICT_RECHECK_SECONDS):
            return self._conflict
        found = None
        for api_version, plural, kind in (_HPA, _KEDA):
            try:
                listed = await self.ctx.api.get(group_path(api_version, self.app.namespace, plural))
            except KubeError as error:
                if error.not_found:
                    continue  # KEDA is not installed
                raise
            found = next((f"{kind}/{name}" for name in _targeting(listed, self.app.name)), None)
            if found is not None:
                break
        if found is not None and found != self._conflict:
            self.report.post(
                [AppEvent(EventType.WARNING, "ConflictingAutoscaler", f"{found} targets this app")]
            )
        self._conflict, self._checked = found, now
        return found

    def _set(self, status: ConditionStatus, reason: str, message: str) -> None:
        self._condition = (status, reason, message)

    def _stamped(self, seen: Observation, status: StreamsAppStatus | None) -> StreamsAppStatus | None:
        """The round's status with the `Autoscaling` condition; its transition time kept while its status
        stays."""
        if status is None or self._condition is None:
            return status
        state, reason, message = self._condition
        kind = ConditionType.AUTOSCALING
        draft = (kind, state, reason, message)
        condition = stamped(draft, seen.previous_status, seen.spec_generation, seen.now)
        others = [c for c in status.conditions if c.type != kind]
        return status.model_copy(update={"conditions": [*others, condition]})


def _targeting(listed: dict[str, Any], app: str) -> list[str]:
    """Names of the listed autoscalers whose scaleTargetRef is this StreamsApp."""
    names = []
    for item in listed.get("items") or []:
        ref = (item.get("spec") or {}).get("scaleTargetRef") or {}
        if ref.get("name") == app and ref.get("kind", api_kind.KIND) == api_kind.KIND:
            names.append((item.get("metadata") or {}).get("name", "?"))
    return sorted(names)


def _message(decision: Decision) -> str:
    measured = "measured from busy time" if decision.capacity_measured else "a lower bound: no busy time"
    text = (
        f"replicas {decision.previous} -> {decision.replicas} ({decision.reason}): input "
        f"{decision.input_rate:.0f} records/s, pod capacity {decision.capacity:.0f} records/s ({measured}), "
        f"backlog {decision.backlog:.0f} records"
    )
    if decision.scales_up:
        text += (
            f"; the migration is forecast to take {decision.predicted_seconds:.0f} s, the backlog to peak at "
            f"{decision.predicted_backlog:.0f} records"
        )
    return text
