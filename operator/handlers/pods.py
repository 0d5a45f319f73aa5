"""The apps' pods: indexed by app, and every change wakes the app's loop."""

from __future__ import annotations

from typing import Any

import kopf

from .. import names
from ..context import OperatorContext
from ..pods import PodInfo, pod_info

_OURS = {names.MANAGED_BY_LABEL: names.MANAGED_BY}


def register(registry: kopf.OperatorRegistry, context: OperatorContext) -> None:
    @kopf.index("", "v1", "pods", labels=_OURS, registry=registry, id="pods_by_app")
    def pods_by_app(
        namespace: str | None, labels: kopf.Labels, body: kopf.Body, **_: Any
    ) -> dict[tuple[str | None, str], PodInfo]:
        app = labels.get(names.APP_LABEL)
        return {(namespace, app): pod_info(body)} if app else {}

    @kopf.on.event("", "v1", "pods", labels=_OURS, registry=registry, id="pod_changed")
    def pod_changed(namespace: str | None, labels: kopf.Labels, **_: Any) -> None:
        app = labels.get(names.APP_LABEL)
        if app and namespace:
            context.apps.trigger(namespace, app)
