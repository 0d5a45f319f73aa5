"""What `observe` reads of a StreamsApp: the app, its pods and its published generation, in one namespace.

The sandbox (`harness.Sandbox`) reads through `AppReader`, and so does a test on a cluster the sandbox did
not start (a real node's, `real_node.py`), so that `observe.observe` and `observe.settle` judge both alike.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Protocol

import kubernetes

from smoothscale.client import from_configmap
from smoothscale.contract import shared_names as contract
from smoothscale.contract.publication import Publication


class AppSource(Protocol):
    """Where `observe` reads an app from (`AppReader`, or the sandbox, which reads through one)."""

    @property
    def zones(self) -> Sequence[str]: ...

    def app(self, name: str, namespace: str | None = None) -> dict[str, Any]: ...

    def pods(self, app: str, namespace: str | None = None) -> list[dict[str, Any]]: ...

    def publication(self, app: str, namespace: str | None = None) -> Publication | None: ...


@dataclass(frozen=True)
class AppReader:
    """An administrator's reads of the apps in `namespace` (or the one a call names), as plain JSON."""

    api: kubernetes.client.ApiClient
    namespace: str = "default"
    zones: tuple[str, ...] = ()
    """The zones of the sandbox's stand-in nodes (`scheduling.node_name`), if any."""

    def app(self, name: str, namespace: str | None = None) -> dict[str, Any]:
        custom = kubernetes.client.CustomObjectsApi(self.api)
        return _json(
            custom.get_namespaced_custom_object(
                contract.GROUP,
                contract.VERSION,
                namespace or self.namespace,
                contract.PLURAL,
                name,
                _preload_content=False,
            )
        )

    def pods(self, app: str, namespace: str | None = None) -> list[dict[str, Any]]:
        """The app's pods as the API returns them."""
        response = kubernetes.client.CoreV1Api(self.api).list_namespaced_pod(
            namespace or self.namespace, label_selector=f"{contract.APP_LABEL}={app}", _preload_content=False
        )
        return list(_json(response)["items"])

    def publication(self, app: str, namespace: str | None = None) -> Publication | None:
        """The generation the operator published last, or None before the first."""
        try:
            response = kubernetes.client.CoreV1Api(self.api).read_namespaced_config_map(
                contract.assignment_configmap(app), namespace or self.namespace, _preload_content=False
            )
        except kubernetes.client.ApiException as error:
            if error.status == 404:
                return None
            raise
        return from_configmap(_json(response))


def _json(response: Any) -> dict[str, Any]:
    """The body of a `_preload_content=False` response: plain JSON, as the API sent it."""
    data: dict[str, Any] = json.loads(response.data)
    return data
