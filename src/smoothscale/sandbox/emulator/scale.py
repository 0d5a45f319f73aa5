"""The `/scale` subresource: an `autoscaling/v1` `Scale` view of an object's replica count.

kmock 0.8 has no subresource semantics. HPA, KEDA and `kubectl scale` drive a `StreamsApp` through `/scale`,
as they would for a CRD declaring `subresources.scale` with spec/status replica paths and a selector path.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class ScalePaths:
    """JSON paths of a CRD's `subresources.scale`; the defaults are those of `StreamsApp`."""

    spec_replicas: str = ".spec.replicas"
    status_replicas: str = ".status.replicas"
    label_selector: str | None = ".status.selector"


def _parts(path: str) -> list[str]:
    return [part for part in path.strip().lstrip(".").split(".") if part]


def get_path(obj: Mapping[str, Any], path: str) -> Any:
    value: Any = obj
    for part in _parts(path):
        value = value.get(part) if isinstance(value, Mapping) else None
    return value


def set_path(obj: Mapping[str, Any], path: str, value: Any) -> dict[str, Any]:
    """A copy of `obj` with `value` at `path`, creating intermediate objects as the API server does."""
    result = copy.deepcopy(dict(obj))
    node = result
    *parents, leaf = _parts(path)
    for part in parents:
        child = node.get(part)
        if not isinstance(child, dict):
            child = node[part] = {}
        node = child
    node[leaf] = value
    return result


def to_scale(obj: Mapping[str, Any], paths: ScalePaths) -> dict[str, Any]:
    """The `Scale` document for `obj`: identity metadata, desired and observed replicas, the selector."""
    metadata = obj.get("metadata") or {}
    status: dict[str, Any] = {"replicas": get_path(obj, paths.status_replicas) or 0}
    selector = get_path(obj, paths.label_selector) if paths.label_selector else None
    if selector is not None:
        status["selector"] = selector
    return {
        "apiVersion": "autoscaling/v1",
        "kind": "Scale",
        "metadata": {
            key: metadata[key]
            for key in ("name", "namespace", "uid", "resourceVersion", "creationTimestamp")
            if key in metadata
        },
        "spec": {"replicas": get_path(obj, paths.spec_replicas) or 0},
        "status": status,
    }


def replicas_of(scale: Mapping[str, Any]) -> int | None:
    """`spec.replicas` of a `Scale` if it is a non-negative integer, else None (the caller answers 422)."""
    replicas = (scale.get("spec") or {}).get("replicas", 0)
    if isinstance(replicas, bool) or not isinstance(replicas, int) or replicas < 0:
        return None
    return replicas
