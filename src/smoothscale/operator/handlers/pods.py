"""The apps' pods: any change wakes the loop of the pod's app, which then lists its pods from the API again
(between such events it reuses the last list: `reconcile.AppReconciler.pods_changed`)."""

from __future__ import annotations

from typing import Any

import kopf

from smoothscale.control import object_names

from ..context import OperatorContext

_OURS = {object_names.MANAGED_BY_LABEL: object_names.MANAGED_BY}


def register(registry: kopf.OperatorRegistry, context: OperatorContext) -> None:
    @kopf.on.event("", "v1", "pods", labels=_OURS, registry=registry, id="pod_changed")
    async def pod_changed(namespace: str | None, labels: kopf.Labels, **_: Any) -> None:
        # Async: on the event loop, which owns the app loop's wake-up (see `apps.app_changed`).
        app = labels.get(object_names.APP_LABEL)
        if app and namespace:
            context.apps.pods_changed(namespace, app)
