"""Turn an HTTP request into a `kmock.Request` with the Kubernetes intent parsed from the URL.

kmock 0.8 parses `/api/v1/namespaces` and `/api/v1/namespaces/<name>` as if `namespaces/<x>` were always a
namespace prefix: listing namespaces raises, fetching one yields no plural. Namespaces are a resource the
operator and kubectl touch, so the emulator parses paths itself and builds kmock's own `Request` object, which
keeps kmock's filters and reactions (`emulator['get', ...] << ...`) working unchanged.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

import aiohttp.web
import kmock

# `/api/v1/namespaces/<name>/<sub>` addresses a namespace's own subresources, not a resource inside it.
_NAMESPACE_SUBRESOURCES = frozenset({"status", "finalize"})


@dataclass(frozen=True)
class K8sPath:
    """The parts of a Kubernetes URL; `group` is None for URLs outside `/api` and `/apis`."""

    group: str | None = None
    version: str | None = None
    plural: str | None = None
    namespace: str | None = None
    name: str | None = None
    subresource: str | None = None


def parse_path(path: str) -> K8sPath:
    """Split `/apis/<g>/<v>[/namespaces/<ns>]/<plural>[/<name>[/<sub>]]` (or `/api/<v>/...`) into parts."""
    parts = [part for part in path.strip("/").split("/") if part]
    if len(parts) >= 2 and parts[0] == "apis":
        group: str = parts[1]
        version = parts[2] if len(parts) >= 3 else None
        rest = parts[3:]
    elif len(parts) >= 2 and parts[0] == "api":
        group, version, rest = "", parts[1], parts[2:]
    else:
        return K8sPath()

    namespace: str | None = None
    is_namespace_itself = len(rest) <= 2 or (len(rest) == 3 and rest[2] in _NAMESPACE_SUBRESOURCES)
    if rest and rest[0] == "namespaces" and not is_namespace_itself:
        namespace, rest = rest[1], rest[2:]
    plural = rest[0] if rest else None
    name = rest[1] if len(rest) >= 2 else None
    subresource = "/".join(rest[2:]) or None
    return K8sPath(group, version, plural, namespace, name, subresource)


def guess_action(k8s: K8sPath, method: str, query: dict[str, str]) -> kmock.action | None:
    """kmock's action vocabulary (list/watch/fetch/create/update/delete); PUT stays None, as in kmock."""
    if k8s.group is None:
        return None
    if method == "GET" and query.get("watch") in ("true", "1"):
        return kmock.action.WATCH
    if k8s.name is None:
        return {"GET": kmock.action.LIST, "POST": kmock.action.CREATE}.get(method)
    return {"GET": kmock.action.FETCH, "PATCH": kmock.action.UPDATE, "DELETE": kmock.action.DELETE}.get(
        method
    )


def _decode_json(body: bytes) -> Any:
    """The parsed body, or None: malformed bodies are rejected later, by the operation that needs them."""
    if not body:
        return None
    try:
        return json.loads(body)
    except ValueError:
        return None


async def parse_request(raw_request: aiohttp.web.BaseRequest, *, request_id: int) -> kmock.Request:
    """Read the whole body and build the kmock request, the same fields kmock's own parser would fill."""
    body = await raw_request.read()
    k8s = parse_path(raw_request.path)
    query = dict(raw_request.query)
    # Keywords only: kmock.resource() guesses the meaning of positional arguments (and of None in them).
    resource = (
        None if k8s.group is None else kmock.resource(group=k8s.group, version=k8s.version, plural=k8s.plural)
    )
    return kmock.Request(
        id=request_id,
        raw_request=raw_request,
        url=raw_request.url,
        method=raw_request.method,
        params=query,
        headers=dict(raw_request.headers),
        cookies=dict(raw_request.cookies),
        body=body,
        text=body.decode("utf-8", errors="replace"),
        data=_decode_json(body),
        action=guess_action(k8s, raw_request.method.upper(), query),
        resource=resource,
        namespace=k8s.namespace,
        name=k8s.name,
        subresource=k8s.subresource,
    )
