"""Every request the operator's own API client may make: one table, enforced on each request, read by RBAC.

The Helm chart grants the operator's ServiceAccount exactly what it needs. So that the grant and the code
cannot drift apart, `KubeClient` classifies each request it is about to send (RBAC's group, resource and
verb) and refuses, before sending, any that this table does not declare: a new API call without a new row
fails in every test that reaches it, with a message naming the missing row, instead of as a 403 on a
cluster. The chart's test (tests/install/test_install_rbac.py) reads the same table, adds what kopf does on
the operator's behalf (derived from the registered handlers), and compares with the rendered Roles.

A create whose owner reference blocks the owner's deletion (`blockOwnerDeletion`) also needs `update` on
the owner's `finalizers` subresource: API servers with the OwnerReferencesPermissionEnforcement admission
plugin reject it otherwise, so that requirement is derived from the request body too.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any, Final

from smoothscale.resource import api_kind


@dataclass(frozen=True, order=True)
class Access:
    """One RBAC permission: API group ("" for core), resource (`plural` or `plural/subresource`), verb."""

    group: str
    resource: str
    verb: str

    def __str__(self) -> str:
        return f"{self.verb} {self.resource}.{self.group or 'core'}"


class UndeclaredAccessError(RuntimeError):
    """The operator tried a request that `CLIENT_ACCESS` does not declare (a programming error)."""


def _rows(group: str, resource: str, *verbs: str) -> frozenset[Access]:
    return frozenset(Access(group, resource, verb) for verb in verbs)


CLIENT_ACCESS: Final[frozenset[Access]] = (
    # Pods: listed every round (never from a cache), created when missing, deleted when retired, stopped or
    # restarted, annotated when leaving.
    _rows("", "pods", "list", "create", "delete", "patch")
    # State claims (spec.storage): one per ordinal, deleted on scale-down with `whenScaled: Delete`; listed
    # and patched to give them the owner `whenDeleted` asks for (retention.py); read back when a creation
    # meets a name already taken (a claim still being deleted).
    | _rows("", "persistentvolumeclaims", "get", "list", "create", "delete", "patch")
    # The app's PodDisruptionBudget (disruption.py): created, then patched as replicas change.
    | _rows("policy", "poddisruptionbudgets", "create", "patch")
    # The assignment ConfigMap: read after a restart, created once, then patched for every generation.
    | _rows("", "configmaps", "get", "create", "patch")
    # The Secret an app's spec.kafka.secretRef names, read by name (never listed or watched).
    | _rows("", "secrets", "get")
    # The app's status.
    | _rows(api_kind.GROUP, f"{api_kind.PLURAL}/status", "patch")
    # spec.autoscaling.mode Act: the operator sets replicas through the scale subresource, and first looks
    # for an HPA or a KEDA ScaledObject that targets the app (it refuses to act beside one).
    | _rows(api_kind.GROUP, f"{api_kind.PLURAL}/scale", "patch")
    | _rows("autoscaling", "horizontalpodautoscalers", "list")
    | _rows("keda.sh", "scaledobjects", "list")
    # spec.failover.leaseSeconds: the pods' Leases, listed by the app's label every round (their renewals);
    # an expired one is taken (replaced, with the resourceVersion last seen) before a generation fails its
    # pod's tasks over, or created taken when its pod's is gone (leases.py, docs/failover.md).
    | _rows("coordination.k8s.io", "leases", "list", "update", "create")
    # Pods, claims and the ConfigMap are owned by their app with blockOwnerDeletion (see the module doc).
    | _rows(api_kind.GROUP, f"{api_kind.PLURAL}/finalizers", "update")
)
"""What `KubeClient` may do. kopf's own requests (watches, finalizers, events, peering) are not here:
they follow from the registered handlers and kopf's settings, which the chart's RBAC test derives."""

# Owner kinds the operator sets: (apiVersion, kind) -> (group, plural).
_OWNER_RESOURCES: Final = {
    (api_kind.API_VERSION, api_kind.KIND): (api_kind.GROUP, api_kind.PLURAL),
}

_PATH = re.compile(
    r"^/(?:api/v1|apis/(?P<group>[^/]+)/[^/]+)"
    r"(?:/namespaces/(?P<namespace>[^/]+))?"
    r"/(?P<plural>[^/]+)(?:/(?P<name>[^/]+)(?:/(?P<subresource>[^/]+))?)?$"
)
_VERBS: Final = {"POST": "create", "PATCH": "patch", "PUT": "update"}


def request_accesses(
    method: str, path: str, params: Mapping[str, str] | None = None, body: Any = None
) -> Iterator[Access]:
    """The permissions one request needs; UndeclaredAccessError for a path that names no resource."""
    match = _PATH.match(path)
    if match is None:
        raise UndeclaredAccessError(f"{method} {path}: not a resource path")
    group, plural, name, subresource = match.group("group", "plural", "name", "subresource")
    resource = plural if subresource is None else f"{plural}/{subresource}"
    yield Access(group or "", resource, _verb(method.upper(), named=name is not None, params=params or {}))
    if method.upper() == "POST" and isinstance(body, Mapping):
        yield from _owner_finalizer_updates(body)


def check(method: str, path: str, params: Mapping[str, str] | None = None, body: Any = None) -> None:
    """Raise UndeclaredAccessError unless `CLIENT_ACCESS` declares everything the request needs."""
    missing = sorted(set(request_accesses(method, path, params, body)) - CLIENT_ACCESS)
    if missing:
        rows = ", ".join(str(access) for access in missing)
        raise UndeclaredAccessError(
            f"{method} {path} needs {rows}: declare it in smoothscale.operator.access.CLIENT_ACCESS "
            "(the Helm chart's RBAC test then asks for the matching rule)"
        )


def _verb(method: str, *, named: bool, params: Mapping[str, str]) -> str:
    if method == "GET":
        if named:
            return "get"
        return "watch" if str(params.get("watch", "")).lower() in ("1", "true") else "list"
    if method == "DELETE":
        return "delete" if named else "deletecollection"
    return _VERBS.get(method, method.lower())


def _owner_finalizer_updates(body: Mapping[str, Any]) -> Iterator[Access]:
    for owner in (body.get("metadata") or {}).get("ownerReferences") or []:
        if not owner.get("blockOwnerDeletion"):
            continue
        found = _OWNER_RESOURCES.get((owner.get("apiVersion"), owner.get("kind")))
        if found is None:
            raise UndeclaredAccessError(f"an owner reference to an unknown kind: {owner.get('kind')}")
        group, plural = found
        yield Access(group, f"{plural}/finalizers", "update")
