"""A small asynchronous Kubernetes API client for the operator's own reads and writes.

kopf watches and indexes; the operator also creates pods, claims and the assignment ConfigMap, patches pod
annotations and the app's status, and reads and takes the pods' Leases. kopf keeps its API client private,
and the official `kubernetes` client is synchronous (a thread per call, heavy models for every pod): for 100
apps reconciled every few seconds, plain JSON over one aiohttp connection pool is the lighter path.
Credentials are kopf's: whatever the login handler produced (`kopf.ConnectionInfo`), so both clients always
talk to the same server as the same user.
"""

from __future__ import annotations

import json
import ssl
from collections.abc import Callable, Mapping
from typing import Any

import aiohttp
import kopf

from . import access

MERGE_PATCH = "application/merge-patch+json"


class KubeError(Exception):
    """A failed API request, with the status code and the server's reason."""

    def __init__(self, status: int, reason: str, message: str) -> None:
        super().__init__(f"{status} {reason}: {message}")
        self.status = status
        self.reason = reason
        self.message = message

    @property
    def not_found(self) -> bool:
        return self.status == 404

    @property
    def conflict(self) -> bool:
        """409: a stale resourceVersion, or a name that is already taken."""
        return self.status == 409


def core_path(namespace: str, plural: str, name: str | None = None, subresource: str | None = None) -> str:
    return _path(f"/api/v1/namespaces/{namespace}/{plural}", name, subresource)


def group_path(
    api_version: str, namespace: str, plural: str, name: str | None = None, subresource: str | None = None
) -> str:
    return _path(f"/apis/{api_version}/namespaces/{namespace}/{plural}", name, subresource)


def _path(base: str, name: str | None, subresource: str | None) -> str:
    path = base if name is None else f"{base}/{name}"
    return path if subresource is None else f"{path}/{subresource}"


class KubeClient:
    """JSON requests with the credentials `connection()` returns at the time of each request (kopf may log
    in again, e.g. when a token expires). Only the requests `access.CLIENT_ACCESS` declares are sent: the
    Helm chart's RBAC is derived from that table."""

    def __init__(
        self,
        connection: Callable[[], kopf.ConnectionInfo],
        *,
        timeout: float = 30.0,
        on_error: Callable[[str], None] | None = None,
    ) -> None:
        """`on_error(verb)`: told of each request that failed (an error status other than not found and
        conflict, which are answers, or no answer at all): the operator counts them."""
        self._connection = connection
        self._on_error = on_error
        self._timeout = aiohttp.ClientTimeout(total=timeout)
        self._session: aiohttp.ClientSession | None = None
        self._session_for: kopf.ConnectionInfo | None = None

    async def close(self) -> None:
        if self._session is not None:
            await self._session.close()
            self._session = None

    async def get(self, path: str, params: Mapping[str, str] | None = None) -> dict[str, Any]:
        return await self._request("GET", path, params=params)

    async def create(self, path: str, body: Mapping[str, Any]) -> dict[str, Any]:
        return await self._request("POST", path, body=body)

    async def replace(self, path: str, body: Mapping[str, Any]) -> dict[str, Any]:
        """PUT: the whole object, conditional on the `metadata.resourceVersion` it carries (409 if stale)."""
        return await self._request("PUT", path, body=body)

    async def patch(self, path: str, body: Any, *, content_type: str = MERGE_PATCH) -> dict[str, Any]:
        return await self._request("PATCH", path, body=body, content_type=content_type)

    async def delete(self, path: str, body: Mapping[str, Any] | None = None) -> dict[str, Any]:
        return await self._request("DELETE", path, body=body)

    async def _request(
        self,
        method: str,
        path: str,
        *,
        params: Mapping[str, str] | None = None,
        body: Any = None,
        content_type: str = "application/json",
    ) -> dict[str, Any]:
        access.check(method, path, params, body)
        info = self._connection()
        session = await self._session_of(info)
        headers = {"Accept": "application/json", **info.as_http_headers()}
        data = None
        if body is not None:
            headers["Content-Type"] = content_type
            data = json.dumps(body)
        url = info.server.rstrip("/") + path
        try:
            async with session.request(method, url, params=params, data=data, headers=headers) as response:
                text = await response.text()
                payload = _json(text)
                if response.status >= 400:
                    reason = str(payload.get("reason") or response.reason or "Failure")
                    raise KubeError(response.status, reason, str(payload.get("message") or text[:500]))
                return payload
        except (KubeError, aiohttp.ClientError, TimeoutError) as error:
            if self._on_error is not None and not (
                isinstance(error, KubeError) and error.status in (404, 409)
            ):
                self._on_error(_VERBS[method])
            raise

    async def _session_of(self, info: kopf.ConnectionInfo) -> aiohttp.ClientSession:
        if self._session is not None and self._session_for is info:
            return self._session
        if self._session is not None:
            await self._session.close()
        connector = aiohttp.TCPConnector(ssl=self._ssl_context(info), limit=64)
        self._session = aiohttp.ClientSession(
            connector=connector, timeout=self._timeout, trust_env=info.trust_env
        )
        self._session_for = info
        return self._session

    @staticmethod
    def _ssl_context(info: kopf.ConnectionInfo) -> ssl.SSLContext | bool:
        """kopf's own TLS setup (CA, client certificate, `insecure`) for https; none for plain http."""
        return info.as_ssl_context() if info.server.startswith("https") else False


_VERBS = {"GET": "get", "POST": "create", "PUT": "update", "PATCH": "patch", "DELETE": "delete"}


def _json(text: str) -> dict[str, Any]:
    try:
        value = json.loads(text) if text else {}
    except json.JSONDecodeError:
        return {}
    return value if isinstance(value, dict) else {}
