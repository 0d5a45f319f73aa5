"""The running app loops of one operator, by app: so that an event about an app or one of its pods wakes the
loop of that app. Its own module, below the loops themselves: the shared context holds one, and the loops
(`runtime`) register in it, without either importing the other.
"""

from __future__ import annotations

from typing import Protocol

from .appref import AppRef


class AppLoop(Protocol):
    """What the registry needs of a running loop (`runtime.AppRuntime`)."""

    @property
    def app(self) -> AppRef: ...

    def trigger(self) -> None: ...

    def pods_changed(self) -> None: ...


class AppRegistry:
    """The running app loops of one operator, so that pod events can wake the loop of their app."""

    def __init__(self) -> None:
        self._apps: dict[tuple[str, str], AppLoop] = {}

    def add(self, runtime: AppLoop) -> None:
        app = runtime.app
        self._apps[(app.namespace, app.name)] = runtime

    def remove(self, runtime: AppLoop) -> None:
        app = runtime.app
        if self._apps.get((app.namespace, app.name)) is runtime:
            del self._apps[(app.namespace, app.name)]

    def trigger(self, namespace: str, name: str) -> None:
        runtime = self._apps.get((namespace, name))
        if runtime is not None:
            runtime.trigger()

    def pods_changed(self, namespace: str, name: str) -> None:
        """A watch event about one of the app's pods: its loop lists them again and reconciles soon."""
        runtime = self._apps.get((namespace, name))
        if runtime is not None:
            runtime.pods_changed()

    def __len__(self) -> int:
        return len(self._apps)
