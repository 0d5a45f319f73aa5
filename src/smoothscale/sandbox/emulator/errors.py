"""Kubernetes `Status` failures, as a real API server words them.

Clients branch on the HTTP code *and* on the `reason` of the `Status` body (the `kubernetes` client's
`ApiException`, kopf's `APIConflictError`, kubectl's messages), so every failure the emulator raises carries
the same code, reason and message shape that kube-apiserver would send.
"""

from __future__ import annotations

from typing import Any

import kmock


def qualified(group: str | None, plural: str | None) -> str:
    """`streamsapps.smoothscale.io`, or `pods` for the core group: how the API server names a resource."""
    return f"{plural}.{group}" if group else f"{plural}"


def api_error(
    code: int, reason: str, message: str, details: dict[str, Any] | None = None
) -> kmock.KubernetesError:
    """One place to build a failure, so that the rendered `Status` is uniform."""
    return kmock.KubernetesError(status=code, reason=reason, message=message, details=details or {})


def status_body(
    code: int, reason: str, message: str, details: dict[str, Any] | None = None
) -> dict[str, Any]:
    """The `metav1.Status` document of a failure (also used inside watch `ERROR` events)."""
    body: dict[str, Any] = {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": message,
        "reason": reason,
        "code": code,
    }
    if details:
        body["details"] = details
    return body


def _details(group: str | None, plural: str | None, name: str | None) -> dict[str, Any]:
    details: dict[str, Any] = {"group": group or "", "kind": plural or ""}
    if name:
        details["name"] = name
    return details


def not_found(group: str | None, plural: str | None, name: str | None) -> kmock.KubernetesError:
    what = qualified(group, plural)
    message = (
        f'{what} "{name}" not found' if name else f"the server could not find the requested resource ({what})"
    )
    return api_error(404, "NotFound", message, _details(group, plural, name))


def already_exists(group: str | None, plural: str | None, name: str) -> kmock.KubernetesError:
    message = f'{qualified(group, plural)} "{name}" already exists'
    return api_error(409, "AlreadyExists", message, _details(group, plural, name))


def conflict(group: str | None, plural: str | None, name: str) -> kmock.KubernetesError:
    message = (
        f'Operation cannot be fulfilled on {qualified(group, plural)} "{name}": '
        "the object has been modified; please apply your changes to the latest version and try again"
    )
    return api_error(409, "Conflict", message, _details(group, plural, name))


def invalid(group: str | None, plural: str | None, name: str | None, message: str) -> kmock.KubernetesError:
    """422: what kube-apiserver answers to a failed JSON-patch `test` op and to invalid objects."""
    return api_error(422, "Invalid", message, _details(group, plural, name))


def bad_request(message: str) -> kmock.KubernetesError:
    return api_error(400, "BadRequest", message)


def method_not_allowed(message: str) -> kmock.KubernetesError:
    return api_error(405, "MethodNotAllowed", message)


def unsupported_media_type(content_type: str) -> kmock.KubernetesError:
    return api_error(
        415, "UnsupportedMediaType", f"the body of the request was in an unknown format: {content_type}"
    )


def internal_error(message: str) -> kmock.KubernetesError:
    return api_error(500, "InternalError", message)


def expired(message: str) -> dict[str, Any]:
    """The 410 `Status` a watch sends (as an `ERROR` event) when its resourceVersion is compacted away."""
    return status_body(410, "Expired", message)
