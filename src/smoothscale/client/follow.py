"""Following a collection (or one named object) through the API, or a mounted directory.

Watches end (timeouts, 410 Gone, a restarted API server, a dropped connection): the follower then lists again
and watches from the list's resourceVersion, the list-then-watch loop of every Kubernetes controller. Listing
again also re-delivers the current objects, which retries whatever a handler failed to do the first time.
Errors never escape: they are logged and the loop starts over after a pause.
"""

from __future__ import annotations

import json
import logging
import threading
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import kubernetes

log = logging.getLogger(__name__)

Body = Mapping[str, Any]
ListFunction = Callable[..., Any]
"""A list call of the `kubernetes` client, such as `CoreV1Api.list_namespaced_config_map`."""


class Follower:
    """Calls `on_list(items)` with every full list, and `on_event(type, object)` with every watch event
    (`ADDED`, `MODIFIED` or `DELETED`) in between. `args` go before the keyword arguments of each call (the
    namespace, for a namespaced list)."""

    def __init__(
        self,
        list_function: ListFunction,
        *args: str,
        on_list: Callable[[list[Body]], None],
        on_event: Callable[[str, Body], None],
        stop: threading.Event,
        field_selector: str | None = None,
        watch_seconds: float = 10.0,
        retry_seconds: float = 1.0,
        name: str = "objects",
    ) -> None:
        self._list = list_function
        self._args = args
        self._on_list = on_list
        self._on_event = on_event
        self._stop = stop
        self._selector = {"field_selector": field_selector} if field_selector else {}
        self._watch_seconds = watch_seconds
        self._retry_seconds = retry_seconds
        self.name = name

    def start(self) -> threading.Thread:
        """Follow from a daemon thread until the stop event is set."""
        thread = threading.Thread(target=self.run, name=f"follow-{self.name}", daemon=True)
        thread.start()
        return thread

    def run(self) -> None:
        while not self._stop.is_set():
            try:
                self._list_then_watch()
            except Exception as error:  # any failure: log, pause, list again
                if self._stop.is_set():
                    return
                log.warning("following %s failed, retrying: %s", self.name, short_error(error))
                self._stop.wait(self._retry_seconds)

    def _list_then_watch(self) -> None:
        response = self._list(*self._args, **self._selector, _preload_content=False)
        listed = json.loads(response.data)
        if self._stop.is_set():
            return
        self._on_list(list(listed.get("items") or []))
        watch = kubernetes.watch.Watch()
        for event in watch.stream(
            self._list,
            *self._args,
            **self._selector,
            resource_version=listed["metadata"]["resourceVersion"],
            timeout_seconds=max(1, round(self._watch_seconds)),
            allow_watch_bookmarks=True,
            deserialize=False,
        ):
            if self._stop.is_set():
                watch.stop()
                return
            if event.get("type") in ("ADDED", "MODIFIED", "DELETED"):
                self._on_event(event["type"], event["object"])


def follow_object(
    list_function: ListFunction,
    namespace: str,
    name: str,
    handle: Callable[[Body | None], None],
    stop: threading.Event,
    *,
    watch_seconds: float = 10.0,
) -> Follower:
    """A follower of the one object `name`: `handle(body)` with each version, `handle(None)` while absent."""
    return Follower(
        list_function,
        namespace,
        on_list=lambda items: handle(items[0] if items else None),
        on_event=lambda kind, body: handle(None if kind == "DELETED" else body),
        stop=stop,
        field_selector=f"metadata.name={name}",
        watch_seconds=watch_seconds,
        name=name,
    )


class MountedDirFollower:
    """Calls `handle(directory)` every `poll_seconds`: the handler skips a generation it has applied, so a
    repeat costs one file read, and a failed application is retried. The kubelet swaps a mounted
    ConfigMap's files atomically (a `..data` symlink), so a read never sees half an update."""

    def __init__(
        self,
        directory: Path,
        handle: Callable[[Path], None],
        stop: threading.Event,
        *,
        poll_seconds: float = 0.5,
    ) -> None:
        self._directory = directory
        self._handle = handle
        self._stop = stop
        self._poll_seconds = poll_seconds

    def start(self) -> threading.Thread:
        thread = threading.Thread(target=self.run, name=f"follow-{self._directory}", daemon=True)
        thread.start()
        return thread

    def run(self) -> None:
        while not self._stop.is_set():
            try:
                self._handle(self._directory)
            except Exception as error:  # the next poll tries again
                log.warning("reading %s failed, retrying: %s", self._directory, short_error(error))
            self._stop.wait(self._poll_seconds)


def short_error(error: BaseException) -> str:
    """The first line of an error, with its type: the `kubernetes` client's messages run to many lines."""
    text = str(error).strip().splitlines()
    return f"{type(error).__name__}: {text[0] if text else ''}"
