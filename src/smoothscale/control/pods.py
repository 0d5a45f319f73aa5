"""What the operator needs to know about one of an app's pods, read once from the pod object.

A reconciliation turns the pods it lists into these small frozen records and never holds on to whole pod
bodies (which may carry secrets in their environment).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from . import object_names

_NOT_RUNNING_PHASES = frozenset({"Succeeded", "Failed"})


@dataclass(frozen=True, slots=True)
class PodInfo:
    name: str
    uid: str
    app: str
    ordinal: int | None
    revision: str | None
    leaving: str | None
    """The raw value of the leaving annotation, or None when the pod is not leaving."""
    leaving_reason: str | None
    node: str | None
    ip: str | None
    metrics_port: int | None
    """The per-pod override of the metrics port, if the pod carries one."""
    phase: str
    ready: bool
    deleting: bool
    created: datetime | None = None
    """The pod object's creation time (None when the API gave none)."""

    @property
    def is_leaving(self) -> bool:
        return self.leaving is not None

    @property
    def stopped(self) -> bool:
        """Its containers have ended for good (Succeeded or Failed): it processes nothing any more."""
        return self.phase in _NOT_RUNNING_PHASES

    @property
    def alive(self) -> bool:
        """It may still be processing tasks: it exists (terminating counts) and has not stopped."""
        return not self.stopped

    @property
    def schedulable_client(self) -> bool:
        """It can take part in planning: on a node, not being deleted, not stopped."""
        return self.node is not None and not self.deleting and not self.stopped


def pod_info(body: Mapping[str, Any]) -> PodInfo:
    """The record of a pod object (as the API returns it)."""
    metadata = body.get("metadata") or {}
    labels = metadata.get("labels") or {}
    annotations = metadata.get("annotations") or {}
    spec = body.get("spec") or {}
    status = body.get("status") or {}
    app = str(labels.get(object_names.APP_LABEL, ""))
    name = str(metadata.get("name", ""))
    return PodInfo(
        name=name,
        uid=str(metadata.get("uid", "")),
        app=app,
        ordinal=object_names.ordinal_of(app, name),
        revision=labels.get(object_names.REVISION_LABEL),
        leaving=annotations.get(object_names.LEAVING_ANNOTATION),
        leaving_reason=annotations.get(object_names.LEAVING_REASON_ANNOTATION),
        node=spec.get("nodeName") or None,
        ip=status.get("podIP") or None,
        metrics_port=_port(annotations.get(object_names.METRICS_PORT_ANNOTATION)),
        phase=str(status.get("phase") or "Pending"),
        ready=_is_ready(status),
        deleting=bool(metadata.get("deletionTimestamp")),
        created=parse_time(str(metadata.get("creationTimestamp") or "")),
    )


def _is_ready(status: Mapping[str, Any]) -> bool:
    conditions = status.get("conditions") or []
    return any(c.get("type") == "Ready" and c.get("status") == "True" for c in conditions)


def _port(value: object) -> int | None:
    try:
        port = int(str(value))
    except ValueError:
        return None
    return port if 0 < port < 65536 else None


def leaving_since(pod: PodInfo) -> datetime | None:
    """When the pod was marked leaving, if its annotation holds a time (the operator writes one)."""
    if pod.leaving is None:
        return None
    return parse_time(pod.leaving)


def parse_time(text: str) -> datetime | None:
    """An RFC 3339 time with a zone (`2026-11-21T10:00:00Z`), or None."""
    try:
        moment = datetime.fromisoformat(text.strip())
    except ValueError:
        return None
    return moment if moment.tzinfo is not None else None


def format_time(moment: datetime) -> str:
    """RFC 3339 in UTC with a `Z`, whole seconds: how Kubernetes writes times."""
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
