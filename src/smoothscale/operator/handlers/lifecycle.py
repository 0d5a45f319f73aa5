"""Operator start and stop, credentials, and the liveness probe."""

from __future__ import annotations

from typing import Any

import kopf

from smoothscale.control import object_names

from ..context import OperatorContext


class _NoDiffBase(kopf.DiffBaseStorage):
    """No last-handled state: kopf keeps one per object for its change handlers (`on.create`, `on.update`,
    `on.field`), and the operator has none (a daemon per app, events for pods and apps). Building it
    deep-copied every app's and pod's body, status included, on every event its own writes caused: 5 % of
    the operator's CPU during a scale-out of 10 apps (`benchmarks/operator_bench.py`, profiled)."""

    def build(self, *, body: kopf.Body, extra_fields: object = None) -> kopf.BodyEssence:
        return kopf.BodyEssence()

    def fetch(self, *, body: kopf.Body) -> kopf.BodyEssence | None:
        return None

    def store(self, *, body: kopf.Body, patch: kopf.Patch, essence: kopf.BodyEssence) -> None:
        """Nothing to keep (see the class)."""


def configure(settings: kopf.OperatorSettings, context: OperatorContext) -> None:
    """kopf settings the operator relies on, whichever way it was started (`smoothscale operator`,
    `kopf run -m smoothscale.operator.entry`, or a test's KopfRunner)."""
    settings.posting.reporting_component = object_names.REPORTING_COMPONENT
    settings.persistence.finalizer = object_names.FINALIZER
    # kopf's progress records as annotations, never in `status` (ours, schema-checked); no diff-base.
    settings.persistence.progress_storage = kopf.AnnotationsProgressStorage(prefix="smoothscale.io")
    settings.persistence.diffbase_storage = _NoDiffBase()
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
