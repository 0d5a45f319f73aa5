"""Following one object through the API, or one mounted directory, and handing every version to a callback.

Watches end (timeouts, 410 Gone, a restarted API server, a dropped connection): the follower then lists the
object again and watches from the list's resourceVersion, the list-then-watch loop of every Kubernetes
controller. Listing again also re-offers the current version, which retries an assignment whose callbacks
failed the first time. Errors never escape: they are logged and the loop starts over after a pause.
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
"""A namespaced list call of the `kubernetes` client, such as `CoreV1Api.list_namespaced_config_map`."""


class ObjectFollower:
    """Calls `handle(body)` with each version of the object `name` (None while it does not exist)."""

    def __init__(
        self,
        list_function: ListFunction,
        namespace: str,
        name: str,
        handle: Callable[[Body | None], None],
        stop: threading.Event,
        *,
        watch_seconds: float = 10.0,
        retry_seconds: float = 1.0,
    ) -> None:
        self._list = list_function
        self._namespace = namespace
        self._selector = f"metadata.name={name}"
        self._name = name
        self._handle = handle
        self._stop = stop
        self._watch_seconds = watch_seconds
        self._retry_seconds = retry_seconds

    def start(self) -> threading.Thread:
        """Follow from a daemon thread until the stop event is set."""
        thread = threading.Thread(target=self.run, name=f"follow-{self._name}", daemon=True)
        thread.start()
        return thread

    def run(self) -> None:
        while not self._stop.is_set():
            try:
                self._list_then_watch()
            except Exception as error:
                if self._stop.is_set():
                    return
                log.warning("following %s failed, retrying: %s", self._name, _short(error))
                self._stop.wait(self._retry_seconds)

    def _list_then_watch(self) -> None:
        response = self._list(self._namespace, field_selector=self._selector, _preload_content=False)
        listed = json.loads(response.data)
        items = listed.get("items") or []
        self._deliver(items[0] if items else None)
        watch = kubernetes.watch.Watch()
        for event in watch.stream(
            self._list,
            self._namespace,
            field_selector=self._selector,
            resource_version=listed["metadata"]["resourceVersion"],
            timeout_seconds=max(1, round(self._watch_seconds)),
            allow_watch_bookmarks=True,
            deserialize=False,
        ):
            if self._stop.is_set():
                watch.stop()
                return
            kind = event.get("type")
            if kind in ("ADDED", "MODIFIED"):
                self._deliver(event["object"])
            elif kind == "DELETED":
                self._deliver(None)

    def _deliver(self, body: Body | None) -> None:
        if not self._stop.is_set():
            self._handle(body)


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
            except Exception as error:
                log.warning("reading %s failed, retrying: %s", self._directory, _short(error))
            self._stop.wait(self._poll_seconds)


def _short(error: Exception) -> str:
    text = str(error).strip().splitlines()
    return f"{type(error).__name__}: {text[0] if text else ''}"
