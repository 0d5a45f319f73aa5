"""Server-owned metadata: what the API server fills in and what clients cannot change.

kmock 0.8 stores bodies as sent. Clients rely on the server for `uid` (owner references), `resourceVersion`
(optimistic concurrency, watch resumption), `creationTimestamp`, `generation` (kopf and our status report
`observedGeneration`) and `generateName` (Events); these helpers keep those rules in one place.
"""

from __future__ import annotations

import copy
import datetime
import random
import uuid
from collections.abc import Callable, Mapping
from typing import Any

# Fields of `metadata` that only the server sets; an update can never change them.
SERVER_OWNED_METADATA = (
    "name",
    "namespace",
    "uid",
    "creationTimestamp",
    "generation",
    "deletionTimestamp",
    "deletionGracePeriodSeconds",
)

# Top-level fields that do not count as "desired state" for `metadata.generation`.
NOT_DESIRED_STATE = frozenset({"apiVersion", "kind", "metadata", "status"})

# kube-apiserver's alphabet for generated name suffixes: no vowels (no words), no look-alike characters.
_SUFFIX_ALPHABET = "bcdfghjklmnpqrstvwxz2456789"
_SUFFIX_LENGTH = 5

# What a real server puts into `.status` of a fresh object of some built-in kinds.
INITIAL_STATUS: dict[str, dict[str, Any]] = {
    "Pod": {"phase": "Pending"},
    "Namespace": {"phase": "Active"},
    "PersistentVolumeClaim": {"phase": "Pending"},
}


def now_rfc3339() -> str:
    """Kubernetes timestamps: UTC, second precision, `Z` suffix."""
    return datetime.datetime.now(tz=datetime.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def new_uid() -> str:
    return str(uuid.uuid4())


def generate_name(prefix: str, is_taken: Callable[[str], bool], *, attempts: int = 8) -> str | None:
    """A free `<prefix><5 random chars>` name, or None if all attempts collided (the server answers 409)."""
    for _ in range(attempts):
        candidate = prefix + "".join(random.choices(_SUFFIX_ALPHABET, k=_SUFFIX_LENGTH))
        if not is_taken(candidate):
            return candidate
    return None


def desired_state(obj: Mapping[str, Any]) -> dict[str, Any]:
    """Everything but metadata and status: a change here bumps `metadata.generation` (as for CRDs)."""
    return {key: value for key, value in obj.items() if key not in NOT_DESIRED_STATE}


def metadata_of(obj: Mapping[str, Any]) -> dict[str, Any]:
    metadata = obj.get("metadata")
    return dict(metadata) if isinstance(metadata, Mapping) else {}


def keep_server_owned(old: Mapping[str, Any], new: dict[str, Any]) -> dict[str, Any]:
    """`new` with the server-owned metadata, `apiVersion` and `kind` of `old` (or without them, as `old`)."""
    old_meta = metadata_of(old)
    new_meta = metadata_of(new)
    for field in SERVER_OWNED_METADATA:
        if field in old_meta:
            new_meta[field] = old_meta[field]
        else:
            new_meta.pop(field, None)
    new["metadata"] = new_meta
    for field in ("apiVersion", "kind"):
        if field in old:
            new[field] = old[field]
    return new


def with_status_of(source: Mapping[str, Any], target: dict[str, Any]) -> dict[str, Any]:
    """`target` with `.status` taken from `source` (dropped if `source` has none)."""
    if "status" in source:
        target["status"] = copy.deepcopy(source["status"])
    else:
        target.pop("status", None)
    return target


def without_resource_version(obj: Mapping[str, Any]) -> dict[str, Any]:
    """For no-op detection: two versions that differ only in resourceVersion are the same state."""
    result = dict(obj)
    metadata = metadata_of(obj)
    metadata.pop("resourceVersion", None)
    result["metadata"] = metadata
    return result


_POD_SPEC_MUTABLE = (
    "`spec.containers[*].image`,`spec.initContainers[*].image`,`spec.activeDeadlineSeconds`,"
    "`spec.tolerations` (only additions to existing tolerations),`spec.terminationGracePeriodSeconds` "
    "(allow it to be set to 1 if it was previously negative)"
)


def pod_spec_change_problem(name: str, old: Mapping[str, Any], new: Mapping[str, Any]) -> str | None:
    """Why kube-apiserver refuses this change of a pod's spec (its message), or None if it allows it. A pod's
    spec is fixed once created, but for images, deadlines and added tolerations; its node is set through
    `pods/binding`, never by an update."""

    def fixed_part(spec: Any, tolerations: Any) -> dict[str, Any]:
        fixed = copy.deepcopy(dict(spec)) if isinstance(spec, Mapping) else {}
        for key in ("containers", "initContainers"):
            for container in fixed.get(key) or []:
                if isinstance(container, dict):
                    container.pop("image", None)
        for key in ("activeDeadlineSeconds", "terminationGracePeriodSeconds"):
            fixed.pop(key, None)
        fixed["tolerations"] = tolerations
        return fixed

    old_spec, new_spec = old.get("spec") or {}, new.get("spec") or {}
    old_tolerations = list(old_spec.get("tolerations") or [])
    new_tolerations = list(new_spec.get("tolerations") or [])
    kept = new_tolerations[: len(old_tolerations)] == old_tolerations
    if fixed_part(old_spec, None) == fixed_part(new_spec, None if kept else new_tolerations):
        return None
    return f'Pod "{name}" is invalid: spec: Forbidden: pod updates may not change fields other than ' + (
        _POD_SPEC_MUTABLE
    )
