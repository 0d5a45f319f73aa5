"""The services one running operator shares between its apps: settings, clock, API client, scraper, metrics,
journal, Events, and the registry that wakes the apps' loops (`loops`). Services only: no decision and no
app's state lives here, and it imports none of the modules that use it.

kopf handlers are registered as closures over one context (see `main.build_registry`), so that several
operators can run in one process (tests, the benchmark) without sharing any state.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

import kopf

from smoothscale.control.events import AppEvent
from smoothscale.resource import api_kind

from .appref import AppRef
from .config import OperatorConfig
from .journal import Journal
from .kube import KubeClient
from .login import connection_from_kubeconfig, discover_connection
from .loops import AppRegistry
from .metrics import OperatorMetrics, serve_metrics
from .scrape import Scraper


class OperatorContext:
    def __init__(self, config: OperatorConfig, *, clock: Callable[[], datetime] | None = None) -> None:
        self.config = config
        self.clock: Callable[[], datetime] = clock or (lambda: datetime.now(UTC))
        self.metrics = OperatorMetrics()
        self.journal = Journal(stdout=config.journal_stdout, path=config.journal_file, clock=self.clock)
        self.scraper = Scraper(timeout=config.scrape_timeout)
        self.api = KubeClient(
            self.connection,
            timeout=config.api_timeout,
            on_error=lambda verb: self.metrics.api_errors.labels(verb).inc(),
        )
        self.apps = AppRegistry()
        self.metrics_port: int | None = None
        self._connection: kopf.ConnectionInfo | None = None
        self._services = contextlib.AsyncExitStack()

    def login(self, **kwargs: Any) -> kopf.ConnectionInfo | None:
        """kopf's login handler: remember the credentials for our own client too."""
        if self.config.kubeconfig is not None:
            info: kopf.ConnectionInfo | None = connection_from_kubeconfig(
                self.config.kubeconfig, self.config.kube_context
            )
        else:
            info = discover_connection(**kwargs)
        self._connection = info
        return info

    def connection(self) -> kopf.ConnectionInfo:
        if self._connection is None:
            raise kopf.LoginError("the operator has not logged in yet")
        return self._connection

    def post_event(self, app: AppRef, event: AppEvent) -> None:
        """A Kubernetes Event about the app, queued to kopf's poster (it never blocks a reconciliation)."""
        involved: kopf.RawBody = {
            "apiVersion": api_kind.API_VERSION,
            "kind": api_kind.KIND,
            "metadata": {"namespace": app.namespace, "name": app.name, "uid": app.uid},
        }
        kopf.event(kopf.Body(involved), type=str(event.type), reason=event.reason, message=event.message)

    async def start(self) -> None:
        port = self.config.metrics_port
        if port is not None:
            served = serve_metrics(self.metrics, self.config.metrics_host, port)
            self.metrics_port = await self._services.enter_async_context(served)

    async def close(self) -> None:
        await self._services.aclose()
        await self.scraper.close()
        await self.api.close()
        self.journal.close()
