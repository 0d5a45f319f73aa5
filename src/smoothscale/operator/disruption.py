"""The app's PodDisruptionBudget `<app>`: how many of its pods a drain may evict at once.

Without one, `kubectl drain` and a cluster upgrade evict every pod of the app on a node at once, and the
operator only learns of it afterwards. The budget lets voluntary evictions through one pod at a time beyond
what the standbys cover: with `numStandbys` caught-up copies of every task on other pods, that many pods may
go at once and each of their tasks still has a copy that takes over without a restore (`max_unavailable`);
with no standbys, one at a time (a budget that allows none would hold every drain until someone deletes it).
It counts the app's pods by their `smoothscale.io/app` label (the surge of a swap counts too) and needs
`minAvailable` as a number, which the operator rewrites as `replicas` changes; unhealthy pods may always be
evicted (`unhealthyPodEvictionPolicy: AlwaysAllow`), so a pod that never turned Ready cannot hold a drain.
The budget is owned by the app and goes with it.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

from smoothscale.control import object_names
from smoothscale.resource import StreamsAppSpec

from .appref import AppRef
from .kube import KubeClient, KubeError, group_path

POLICY_API = "policy/v1"


def max_unavailable(spec: StreamsAppSpec) -> int:
    """Pods that may be evicted at once: as many as every task has standbys (each task keeps a copy on a
    pod that stays), and at least one."""
    return max(1, spec.assignment.num_standbys)


def min_available(spec: StreamsAppSpec) -> int:
    return max(0, spec.replicas - max_unavailable(spec))


def build_budget(app: AppRef, spec: StreamsAppSpec) -> dict[str, Any]:
    """The PodDisruptionBudget `<app>` for `spec`."""
    return {
        "apiVersion": POLICY_API,
        "kind": "PodDisruptionBudget",
        "metadata": {
            "name": app.name,
            "namespace": app.namespace,
            "labels": object_names.app_labels(app.name),
            "ownerReferences": [app.owner_reference()],
        },
        "spec": {
            "minAvailable": min_available(spec),
            "selector": {"matchLabels": {object_names.APP_LABEL: app.name}},
            "unhealthyPodEvictionPolicy": "AlwaysAllow",
        },
    }


class BudgetKeeper:
    """Writes the budget when its size changes, and again every `recheck` (someone may have deleted or
    edited it): a steady app costs no request in between."""

    def __init__(self, app: AppRef, api: KubeClient, recheck: timedelta) -> None:
        self.app = app
        self.api = api
        self.recheck = recheck
        self._written: tuple[int, datetime] | None = None

    async def keep(self, spec: StreamsAppSpec, now: datetime) -> None:
        wanted = min_available(spec)
        written = self._written
        if written is not None and written[0] == wanted and now - written[1] < self.recheck:
            return
        body = build_budget(self.app, spec)
        path = group_path(POLICY_API, self.app.namespace, "poddisruptionbudgets")
        try:
            await self.api.create(path, body)
        except KubeError as error:
            if not error.conflict:
                raise
            await self.api.patch(f"{path}/{self.app.name}", {"spec": body["spec"]})
        self._written = (wanted, now)
