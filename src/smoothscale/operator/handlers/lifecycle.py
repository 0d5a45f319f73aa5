"""Operator start and stop, credentials, and the liveness probe."""

from __future__ import annotations

from typing import Any

import kopf

from smoothscale.control import object_names

from ..context import OperatorContext


def configure(settings: kopf.OperatorSettings, context: OperatorContext) -> None:
    """kopf settings the operator relies on, whichever way it was started (`smoothscale operator`,
    `kopf run -m smoothscale.operator.entry`, or a test's KopfRunner)."""
    settings.posting.reporting_component = object_names.REPORTING_COMPONENT
    settings.persistence.finalizer = object_names.FINALIZER
    # kopf's progress and diff-base records as annotations, never in `status` (ours, schema-checked).
    settings.persistence.progress_storage = kopf.AnnotationsProgressStorage(prefix="smoothscale.io")
    settings.persistence.diffbase_storage = kopf.AnnotationsDiffBaseStorage(prefix="smoothscale.io")
    settings.peering.name = context.config.peering
    if not settings.peering.standalone:
        settings.peering.mandatory = True  # one acting replica is a safety property, not a nicety


def register(registry: kopf.OperatorRegistry, context: OperatorContext) -> None:
    @kopf.on.startup(registry=registry)
    async def start(settings: kopf.OperatorSettings, **_: Any) -> None:
        configure(settings, context)
        await context.start()

    @kopf.on.cleanup(registry=registry)
    async def stop(**_: Any) -> None:
        await context.close()

    @kopf.on.login(registry=registry)
    def login(**kwargs: Any) -> kopf.ConnectionInfo | None:
        return context.login(**kwargs)

    @kopf.on.probe(registry=registry, id="apps", errors=kopf.ErrorsMode.PERMANENT)
    def apps(**_: Any) -> int:
        # Not logged in (no credentials found, or none that work yet): kopf watches nothing and retries only
        # every minute, so the probe fails (HTTP 500 at once: a permanent error is not retried) and the pod
        # is not Ready, rather than Ready and idle.
        context.connection()
        return len(context.apps)
