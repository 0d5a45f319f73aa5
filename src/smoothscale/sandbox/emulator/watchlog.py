"""A bounded, resourceVersion-ordered history of changes per resource, which watch streams resume from.

kmock 0.8 broadcasts changes on a bus that a watcher sees only from the moment it subscribes, so a client that
lists at resourceVersion N and then watches from N misses whatever happened in between, and a reconnecting
client gets everything replayed as ADDED. Keeping the recent events with their resourceVersions lets a watch
start exactly after the version the client passes, as kube-apiserver's watch cache does, and answer
"410 Expired" when that version has been compacted away.
"""

from __future__ import annotations

import asyncio
import bisect
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class StoredEvent:
    """One change: `old` is the previous version for MODIFIED (selectors may turn it into ADDED/DELETED)."""

    resource_version: int
    type: str
    object: dict[str, Any]
    old: dict[str, Any] | None = None


class EventLog:
    """The recent events of one resource kind; keeps between `capacity` and `2 * capacity` of them."""

    def __init__(self, capacity: int) -> None:
        self._capacity = max(1, capacity)
        self._events: list[StoredEvent] = []
        self._versions: list[int] = []
        self._compacted_through = 0  # events with resourceVersion <= this may have been dropped
        self._changed: asyncio.Event | None = None

    @property
    def compacted_through(self) -> int:
        return self._compacted_through

    def append(self, event: StoredEvent) -> None:
        self._events.append(event)
        self._versions.append(event.resource_version)
        if len(self._events) > 2 * self._capacity:  # amortised: drop a whole batch at once
            dropped = len(self._events) - self._capacity
            self._compacted_through = self._versions[dropped - 1]
            del self._events[:dropped]
            del self._versions[:dropped]
        self.wake()

    def since(self, resource_version: int) -> list[StoredEvent] | None:
        """Events newer than `resource_version`, or None if some of them are already compacted."""
        if resource_version < self._compacted_through:
            return None
        return self._events[bisect.bisect_right(self._versions, resource_version) :]

    def wake(self) -> None:
        """Wake every watcher waiting on this log (new events, or the server is closing)."""
        if self._changed is not None:
            self._changed.set()
            self._changed = None

    async def wait(self, timeout: float) -> None:
        """Sleep until the next `append`/`wake`, or at most `timeout` seconds."""
        if self._changed is None:
            self._changed = asyncio.Event()
        changed = self._changed
        try:
            async with asyncio.timeout(max(0.0, timeout)):
                await changed.wait()
        except TimeoutError:
            pass
