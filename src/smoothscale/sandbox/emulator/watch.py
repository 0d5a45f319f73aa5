"""Watch streams with the API server's semantics: resume, timeout, bookmarks, selectors.

kmock 0.8 replays every object as ADDED on each watch and never ends a stream. Clients depend on more:
kopf resumes from the last resourceVersion it saw and restarts on "410 Expired"; the `kubernetes` client
and kubectl pass `timeoutSeconds` and expect the stream to end; kopf asks for bookmarks and reconnects after
70 s of silence without them. The stream yields kmock payloads: dicts become one JSON document per line.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable, Mapping
from dataclasses import dataclass
from typing import Any

import kmock

from . import errors
from .selectors import ObjectFilter
from .store import ObjectStore
from .watchlog import StoredEvent

# A watcher wakes at least this often to notice a vanished client or a closing server.
_POLL_SECONDS = 1.0


@dataclass(frozen=True)
class WatchOptions:
    """The query parameters of a watch request that change what it streams."""

    where: ObjectFilter
    resource_version: int | None  # None: start with the current state as synthetic ADDED events
    timeout: float | None
    bookmarks: bool
    initial_events_end: bool  # sendInitialEvents=true: end the initial ADDED events with a marked bookmark

    @classmethod
    def from_query(cls, where: ObjectFilter, query: Mapping[str, str]) -> WatchOptions:
        """Parse and validate, so that bad parameters answer 400 before the stream starts."""
        raw_version = query.get("resourceVersion") or ""
        send_initial = query.get("sendInitialEvents") == "true"
        try:
            resource_version = None if raw_version in ("", "0") or send_initial else int(raw_version)
            timeout = float(query["timeoutSeconds"]) if query.get("timeoutSeconds") else None
        except ValueError as exc:
            raise errors.bad_request(f"invalid watch parameters: {exc}") from exc
        bookmarks = query.get("allowWatchBookmarks") == "true"
        return cls(where, resource_version, timeout, bookmarks, send_initial and bookmarks)


def _as_seen_by(event: StoredEvent, where: ObjectFilter) -> dict[str, Any] | None:
    """The event as this watcher must see it: objects entering or leaving its selection appear or vanish."""
    matches_now = where.matches(event.object)
    if event.type == "MODIFIED" and event.old is not None:
        matched_before = where.matches(event.old)
        if matches_now and not matched_before:
            return {"type": "ADDED", "object": event.object}
        if matched_before and not matches_now:
            return {"type": "DELETED", "object": event.object}
    return {"type": event.type, "object": event.object} if matches_now else None


def _bookmark(
    api_version: str, kind: str, resource_version: int, *, initial_end: bool = False
) -> dict[str, Any]:
    metadata: dict[str, Any] = {"resourceVersion": str(resource_version)}
    if initial_end:
        metadata["annotations"] = {"k8s.io/initial-events-end": "true"}
    return {"type": "BOOKMARK", "object": {"apiVersion": api_version, "kind": kind, "metadata": metadata}}


async def stream_events(
    store: ObjectStore,
    resource: kmock.resource,
    options: WatchOptions,
    *,
    bookmark_interval: float,
    is_over: Callable[[], bool],
) -> AsyncIterator[kmock.Payload]:
    """Yield watch events until `timeoutSeconds` passes, the client goes away, or `is_over()` says so."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + options.timeout if options.timeout is not None else None
    api_version, kind = store.type_meta(resource)
    log = store.log(resource)
    yield b""  # send the headers now: clients wait for them before they consider the watch started

    if options.resource_version is None:
        cursor = store.resource_version
        for obj in store.select(resource, options.where):
            yield {"type": "ADDED", "object": obj}
        if options.initial_events_end:
            yield _bookmark(api_version, kind, cursor, initial_end=True)
    else:
        cursor = options.resource_version

    last_bookmark = loop.time()
    while True:
        events = log.since(cursor)
        if events is None:
            message = f"too old resource version: {cursor} ({log.compacted_through})"
            yield {"type": "ERROR", "object": errors.expired(message)}
            return
        for event in events:
            cursor = event.resource_version
            seen = _as_seen_by(event, options.where)
            if seen is not None:
                yield seen
        if events:
            continue  # more may have arrived while we were sending

        # Caught up, and nothing awaited since `log.since()`: the store's version is safe to bookmark.
        now = loop.time()
        if is_over() or (deadline is not None and now >= deadline):
            return
        if options.bookmarks and now - last_bookmark >= bookmark_interval:
            cursor = store.resource_version
            last_bookmark = now
            yield _bookmark(api_version, kind, cursor)
            continue
        wait = _POLL_SECONDS
        if deadline is not None:
            wait = min(wait, deadline - now)
        if options.bookmarks:
            wait = min(wait, last_bookmark + bookmark_interval - now)
        await log.wait(wait)
