"""The reconciler's pods come from a list of the API server, never from a watch cache; a steady app's rounds
reuse the last list while nothing says the pods changed: a watch event about them (kopf's `pod_changed`),
the operator's own pod actions, a failed round, or `pods_recheck` passing."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import timedelta
from typing import Any

from test_op_round_decisions import APP, NOW, seen

from smoothscale.control import object_names
from smoothscale.control import step as control_step
from smoothscale.control.scaling import PodSetPlan
from smoothscale.operator.appref import AppRef
from smoothscale.operator.config import OperatorConfig
from smoothscale.operator.context import OperatorContext
from smoothscale.operator.reconcile import AppReconciler

RECHECK = 30.0


class CountingApi:
    """The API server's pods of the app, counting the lists; pod patches change them."""

    def __init__(self) -> None:
        self.lists = 0
        self.pods = {f"{APP}-{n}": self._pod(n) for n in range(3)}

    @staticmethod
    def _pod(ordinal: int) -> dict[str, Any]:
        labels = {object_names.APP_LABEL: APP, object_names.MANAGED_BY_LABEL: object_names.MANAGED_BY}
        metadata = {"name": f"{APP}-{ordinal}", "uid": f"uid-{ordinal}", "labels": labels, "annotations": {}}
        return {"metadata": metadata, "status": {"phase": "Running", "podIP": f"10.0.0.{ordinal}"}}

    async def get(self, path: str, params: Mapping[str, str] | None = None) -> dict[str, Any]:
        if path.endswith("/persistentvolumeclaims"):
            return {"items": []}  # the claims' owners, brought in line once
        assert path.endswith("/pods"), path
        self.lists += 1
        return {"items": list(self.pods.values())}

    async def create(self, path: str, body: Any) -> Any:
        assert path.endswith("/poddisruptionbudgets"), path  # the app's budget: the only thing created here
        return body

    async def patch(self, path: str, body: Any, **_: Any) -> dict[str, Any]:
        pod = self.pods[path.rsplit("/", 1)[1]]
        pod["metadata"]["annotations"].update(body["metadata"]["annotations"])
        return pod


def _reconciler() -> tuple[AppReconciler, CountingApi]:
    config = OperatorConfig(journal_stdout=False, metrics_port=None, pods_recheck=RECHECK)
    context = OperatorContext(config, clock=lambda: NOW)
    api = CountingApi()
    context.api = api  # type: ignore[assignment]
    return AppReconciler(AppRef("default", APP, "uid"), context), api


async def test_a_steady_apps_rounds_reuse_the_pods_as_listed_until_something_says_they_changed() -> None:
    reconciler, api = _reconciler()
    listed = await reconciler._pods(NOW)
    assert api.lists == 1 and [p.name for p in listed] == [f"{APP}-{n}" for n in range(3)]
    for at in (1, 10, RECHECK - 1):
        assert await reconciler._pods(NOW + timedelta(seconds=at)) == listed, "nothing changed"
    assert api.lists == 1
    reconciler.pods_changed()  # a watch event about one of them
    await reconciler._pods(NOW + timedelta(seconds=RECHECK - 1))
    assert api.lists == 2
    await reconciler._pods(NOW + timedelta(seconds=2 * RECHECK))
    assert api.lists == 3, "pods_recheck passed: listed again whatever the watch says"
    reconciler.failed()
    await reconciler._pods(NOW + timedelta(seconds=2 * RECHECK))
    assert api.lists == 4, "a failed round may have changed pods"


async def test_the_round_after_the_operator_changed_a_pod_sees_the_change() -> None:
    reconciler, api = _reconciler()
    pods = await reconciler._pods(NOW)
    drain = control_step.Decisions(pod_set=PodSetPlan(stamp_leaving=(f"{APP}-1",)))
    await reconciler._act(seen(pods, {}), drain)
    after = await reconciler._pods(NOW + timedelta(seconds=1))
    assert api.lists == 2
    assert [p.name for p in after if p.is_leaving] == [f"{APP}-1"], "no watch event needed to see it"
