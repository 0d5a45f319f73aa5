"""StreamsApps: one reconciliation loop per app (a kopf daemon), woken when the spec changes."""

from __future__ import annotations

from typing import Any

import kopf

from smoothscale.resource import api_kind as resource

from ..appref import AppRef
from ..context import OperatorContext
from ..reconcile import AppObject
from ..runtime import run_app

_APP = (resource.GROUP, resource.VERSION, resource.PLURAL)


def register(registry: kopf.OperatorRegistry, context: OperatorContext) -> None:
    @kopf.daemon(*_APP, registry=registry, id="reconcile", cancellation_timeout=10.0)
    async def reconcile(
        stopped: kopf.DaemonStopped,
        body: kopf.Body,
        name: str,
        namespace: str | None,
        uid: str,
        **kwargs: Any,
    ) -> None:
        # kopf passes an index as the kwarg named after its handler (see handlers.nodes).
        zones_by_node: kopf.Index[str, str] = kwargs["zones_by_node"]

        def observe() -> AppObject:
            zones = {node: zone for node, found in zones_by_node.items() for zone in found}
            return AppObject(body=body, zones=zones)

        await run_app(context, AppRef(namespace or "default", name, uid), observe, stopped.wait)

    @kopf.on.event(*_APP, registry=registry, id="app_changed")
    async def app_changed(
        name: str, namespace: str | None, meta: kopf.Meta, status: kopf.Status, **_: Any
    ) -> None:
        # Our own status writes come back as events too: only a new spec generation wakes the loop. Async, so
        # that it runs on the event loop: a synchronous handler runs in a thread, and the loop's wake-up
        # (an asyncio.Event) is not thread-safe (set from a thread, a waiter may sleep on to its next timer).
        if namespace and meta.get("generation") != status.get("observedGeneration"):
            context.apps.trigger(namespace, name)
