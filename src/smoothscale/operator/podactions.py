"""Carrying out the pod-set decisions (`scaling.PodSetPlan`) through the API.

Every step is idempotent, because the operator may die between any two of them and run the same decision
again: a name already taken means the pod is there (409; a claim's is read back, `_create_claim`), a pod or
claim already gone is fine (404).
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import Any

from smoothscale.control import object_names
from smoothscale.control.pods import format_time
from smoothscale.control.scaling import PodSetPlan
from smoothscale.resource import StreamsAppSpec

from .appref import AppRef
from .kube import KubeClient, KubeError, core_path
from .podset import build_pod, build_state_claim
from .reporting import AppReporter


class PodSetActions:
    def __init__(self, app: AppRef, api: KubeClient, reporter: AppReporter) -> None:
        self.app = app
        self.api = api
        self.report = reporter

    async def apply(
        self, decided: PodSetPlan, spec: StreamsAppSpec, revision: str, now: datetime
    ) -> set[str]:
        """Every step of `decided`, in a safe order; returns the pods it deleted."""
        stamp = format_time(now)
        for pod in decided.stamp_leaving:
            await self._annotate(
                pod, {object_names.LEAVING_ANNOTATION: stamp}, "stamp-leaving", "DrainRequested"
            )
        for pod, reason in decided.mark_leaving:
            marks = {object_names.LEAVING_ANNOTATION: stamp, object_names.LEAVING_REASON_ANNOTATION: reason}
            await self._annotate(pod, marks, "leaving", reason)
        for pod in decided.unmark_leaving:
            unmark = {object_names.LEAVING_ANNOTATION: None, object_names.LEAVING_REASON_ANNOTATION: None}
            await self._annotate(pod, unmark, "kept", "ReplicasRaised")
        deleted = set()
        for retired in decided.retire:
            deleted.add(await self._delete_pod(retired.pod, "retire", retired.reason))
            if retired.delete_claim and retired.ordinal is not None:
                claim = object_names.state_claim(self.app.name, retired.ordinal)
                await self._delete(core_path(self.app.namespace, "persistentvolumeclaims", claim))
        for pod in decided.remove_stopped:
            deleted.add(await self._delete_pod(pod, "remove-stopped", "Stopped"))
        for pod in decided.restart:
            deleted.add(await self._delete_pod(pod, "restart", "RollingRestart"))
        for ordinal in decided.create:
            await self._create_pod(spec, ordinal, revision)
        return deleted

    async def _annotate(
        self, pod: str, annotations: Mapping[str, str | None], step: str, reason: str
    ) -> None:
        try:
            await self.api.patch(
                core_path(self.app.namespace, "pods", pod), {"metadata": {"annotations": annotations}}
            )
        except KubeError as error:
            if not error.not_found:
                raise
        self.report.scaling(step, pod, reason)

    async def _delete_pod(self, pod: str, step: str, reason: str) -> str:
        await self._delete(core_path(self.app.namespace, "pods", pod))
        self.report.scaling(step, pod, reason)
        return pod

    async def _delete(self, path: str) -> None:
        try:
            await self.api.delete(path)
        except KubeError as error:
            if not error.not_found:
                raise

    async def _create_pod(self, spec: StreamsAppSpec, ordinal: int, revision: str) -> None:
        """The ordinal's claim first (kept if it exists: the state of a previous pod of that ordinal), then
        the pod."""
        claim = build_state_claim(self.app, spec, ordinal)
        if claim is not None:
            await self._create_claim(claim)
        pod = build_pod(self.app, spec, ordinal, revision)
        await self._create(core_path(self.app.namespace, "pods"), pod)
        self.report.scaling("create", pod["metadata"]["name"], "MissingPod")

    async def _create_claim(self, claim: Mapping[str, Any]) -> None:
        """Create the claim, or make sure it stands: the pod is created only then. A 409 alone proves
        nothing: the name may be held by a claim still being deleted (a scale-in deleted it, and its
        `kubernetes.io/pvc-protection` finalizer keeps it while the pod that used it runs), which then goes.
        A pod created meanwhile would stay Pending for good (its claim never comes), never ready, taking part
        in no plan while it counts toward `replicas` (issue 40: two pods of a chaos run held no task for
        minutes). So after a 409 the claim is read back: gone meanwhile, it is created again; being deleted,
        this round fails (`ClaimTerminating`) and the next one tries again."""
        path = core_path(self.app.namespace, "persistentvolumeclaims")
        try:
            await self.api.create(path, claim)
            return
        except KubeError as error:
            if not error.conflict:
                raise
        name = claim["metadata"]["name"]
        try:
            found = await self.api.get(core_path(self.app.namespace, "persistentvolumeclaims", name))
        except KubeError as error:
            if not error.not_found:
                raise
            await self.api.create(path, claim)
            return
        if found.get("metadata", {}).get("deletionTimestamp"):
            raise KubeError(
                409,
                "ClaimTerminating",
                f"claim {name} is still being deleted: its pod waits until it is gone",
            )

    async def _create(self, path: str, body: Mapping[str, Any]) -> None:
        try:
            await self.api.create(path, body)
        except KubeError as error:
            if not error.conflict:
                raise
