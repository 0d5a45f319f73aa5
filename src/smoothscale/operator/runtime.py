"""The loop that drives one app's reconciler (`loops.AppRegistry` wakes it).

One loop per app (inside kopf's daemon for that app, so peering stops it when another operator takes over,
and deletion of the app ends it): reconciliations of an app never overlap. The loop runs a round every scrape
interval (an app at rest: when its first pod is due a steady read), or earlier when woken: by a change of
the app or of one of its pods (debounced, so that a burst of changes makes one round), or by the moment the
last step said a time-based rule falls due (`wake_at`: a follow-up probe, a start-up grace, a scale-down
timeout...). A round that observes what the last step observed, before that moment, is not decided again
(`control.step.Stepped.repeats`). While it waits, a pending hand-over is polled
(`AppReconciler.poll_handover`) in the same loop, so polls never overlap rounds.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable
from datetime import datetime

from .appref import AppRef
from .context import OperatorContext
from .reconcile import AppObject, AppReconciler

logger = logging.getLogger(__name__)


class AppRuntime:
    def __init__(
        self,
        reconciler: AppReconciler,
        *,
        interval: float,
        debounce: float,
        clock: Callable[[], datetime],
    ) -> None:
        self.reconciler = reconciler
        self._interval = interval
        self._debounce = debounce
        self._clock = clock
        self._wake = asyncio.Event()
        self._stop = asyncio.Event()

    def trigger(self) -> None:
        """Something relevant changed: reconcile soon (after the debounce)."""
        self._wake.set()

    def pods_changed(self) -> None:
        """A watch event about one of the app's pods: the next round lists them again, soon."""
        self.reconciler.pods_changed()
        self.trigger()

    def stop(self) -> None:
        self._stop.set()
        self._wake.set()

    async def run(self, observe: Callable[[], AppObject]) -> None:
        """Reconcile until stopped; a failed round is logged and retried at the next interval."""
        delay = 0.0
        while not self._stop.is_set():
            if await self._wait(delay) and self._debounce > 0:
                await self._sleep(self._debounce, wakeable=False)
            if self._stop.is_set():
                break
            self._wake.clear()
            try:
                await self.reconciler.reconcile(observe())
            except asyncio.CancelledError:
                raise
            except Exception:
                logger.exception("reconciliation of %s failed; retrying in %.1fs", self.app, self._interval)
                self.reconciler.failed()
            delay = self._next_delay()

    @property
    def app(self) -> AppRef:
        return self.reconciler.app

    def _next_delay(self) -> float:
        """Until the next round has something new to read (the next scrape; for an app at rest, its pods'
        next steady read), or earlier when the last step's first time-based rule falls due. A step that
        wants every round (its `wake_at` is its own time: a migration measured over time) waits for the next
        scrape like any other: there is nothing new to observe before it."""
        read = self.reconciler.next_round_in()
        wake_at = self.reconciler.wake_at()
        due = None if wake_at is None else (wake_at - self._clock()).total_seconds()
        return read if due is None or due <= 0 else min(read, due)

    async def _wait(self, seconds: float) -> bool:
        """Wait `seconds` for the next round (True if woken early), following any pending hand-over
        meanwhile. A failed poll ends the wait: the round reads the ConfigMap and the pods afresh."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + seconds
        while (poll := self.reconciler.handover_poll_delay()) is not None and poll < deadline - loop.time():
            if await self._sleep(poll):
                return True
            try:
                await self.reconciler.poll_handover()
            except asyncio.CancelledError:
                raise
            except Exception:
                logger.exception("following the hand-over of %s failed; reconciling now", self.app)
                return True
        return await self._sleep(max(0.0, deadline - loop.time()))

    async def _sleep(self, seconds: float, *, wakeable: bool = True) -> bool:
        """Sleep up to `seconds`; True if woken early by a trigger (or by stop)."""
        event = self._wake if wakeable else self._stop
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(seconds):
                await event.wait()
                return True
        return False


async def run_app(
    context: OperatorContext,
    app: AppRef,
    observe: Callable[[], AppObject],
    stopped: Callable[[], Awaitable[object]],
) -> None:
    """An app's loop, registered so that its pods' events reach it, until `stopped()` completes (kopf's
    daemon flag: the app is deleted, the operator exits or peering pauses it)."""
    config = context.config
    runtime = AppRuntime(
        AppReconciler(app, context),
        interval=config.scrape_interval,
        debounce=config.debounce,
        clock=context.clock,
    )
    context.apps.add(runtime)

    async def stop_when_stopped() -> None:
        await stopped()
        runtime.stop()

    watcher = asyncio.create_task(stop_when_stopped())
    try:
        await runtime.run(observe)
    finally:
        watcher.cancel()
        context.apps.remove(runtime)
        runtime.reconciler.forget()
