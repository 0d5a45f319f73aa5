"""Server-side printing: the `Table` kubectl asks for, so that `kubectl get` shows the columns it would show
against a real API server.

kubectl asks for `application/json;as=Table;v=v1;g=meta.k8s.io` and prints the server's columns; given plain
objects it prints only NAME and AGE. A real server prints a CRD's `additionalPrinterColumns` (JSONPath into
the object) and its own columns for built-in kinds. Here: a kind's printer columns when it has any (the
StreamsApp's, from its CRD), pods' and nodes' usual columns, and NAME and AGE for the rest. Columns with a
priority above 0 are the ones `-o wide` adds.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

Json = dict[str, Any]

_FILTER = re.compile(r'^\[\?\(@\.(?P<field>[A-Za-z0-9_]+)\s*==\s*"(?P<value>[^"]*)"\)\]')
_FIELD = re.compile(r"^\.(?P<field>[A-Za-z0-9_-]+)")


def human_age(timestamp: str, now: datetime | None = None) -> str:
    """The age of an RFC 3339 time as kube-apiserver writes it (its `duration.HumanDuration`): `45s`,
    `3m12s`, `25m`, `4h10m`, `30h`, `3d4h`, `12d`."""
    try:
        then = datetime.fromisoformat(timestamp.replace("Z", "+00:00"))
    except ValueError:
        return "<unknown>"
    seconds = int(((now or datetime.now(UTC)) - then).total_seconds())
    if seconds < 0:
        return "<invalid>"
    minutes, hours, days = seconds // 60, seconds // 3600, seconds // 86400
    if seconds < 120:
        return f"{seconds}s"
    if minutes < 10:
        return f"{minutes}m{seconds % 60}s" if seconds % 60 else f"{minutes}m"
    if minutes < 180:
        return f"{minutes}m"
    if hours < 8:
        return f"{hours}h{minutes % 60}m" if minutes % 60 else f"{hours}h"
    if hours < 48:
        return f"{hours}h"
    if hours < 192:
        return f"{days}d{hours % 24}h" if hours % 24 else f"{days}d"
    return f"{days}d"


def wants_table(headers: Mapping[str, str]) -> bool:
    """kubectl's `Accept` for `get`: a Table first, plain JSON as the fallback."""
    accept = next((value for key, value in headers.items() if key.lower() == "accept"), "")
    return "as=Table" in accept


def json_path(obj: Any, path: str) -> Any:
    """The value at a printer column's path: `.a.b` fields and `[?(@.key=="value")]` list filters (the
    forms CRD printer columns use), the first match of a filter; None when anything is missing."""
    rest = path.strip()
    value = obj
    while rest:
        if field := _FIELD.match(rest):
            value = value.get(field["field"]) if isinstance(value, Mapping) else None
            rest = rest[field.end() :]
        elif selected := _FILTER.match(rest):
            items = value if isinstance(value, list) else []
            value = next(
                (
                    i
                    for i in items
                    if isinstance(i, Mapping) and str(i.get(selected["field"])) == selected["value"]
                ),
                None,
            )
            rest = rest[selected.end() :]
        else:
            raise ValueError(f"unsupported printer column path {path!r} at {rest!r}")
    return value


@dataclass(frozen=True)
class Column:
    """One printer column: its header, type (string, integer, number, boolean, date), how to read it."""

    name: str
    type: str
    read: Callable[[Json], Any]
    description: str = ""
    priority: int = 0
    format: str = ""

    def cell(self, obj: Json) -> Any:
        """The cell of `obj`; a date as an age (`5m`), as the API server renders date columns."""
        value = self.read(obj)
        return human_age(value) if self.type == "date" and isinstance(value, str) else value

    def definition(self) -> Json:
        return {
            "name": self.name,
            "type": self.type,
            "format": self.format,
            "description": self.description,
            "priority": self.priority,
        }


NONE = "<none>"
"""What kube-apiserver's own printers put in an empty cell."""
NAME = Column("Name", "string", lambda o: (o.get("metadata") or {}).get("name"), format="name")
AGE = Column("Age", "date", lambda o: (o.get("metadata") or {}).get("creationTimestamp"))


def crd_columns(printer_columns: Iterable[Mapping[str, Any]]) -> list[Column]:
    """Name, then a CRD's `additionalPrinterColumns`."""

    def reader(path: str) -> Callable[[Json], Any]:
        return lambda obj: json_path(obj, path)

    return [NAME] + [
        Column(
            str(c["name"]),
            str(c["type"]),
            reader(str(c["jsonPath"])),
            str(c.get("description", "")),
            int(c.get("priority", 0)),
            str(c.get("format", "")),
        )
        for c in printer_columns
    ]


def _pod_ready(pod: Json) -> str:
    statuses = (pod.get("status") or {}).get("containerStatuses") or []
    containers = (pod.get("spec") or {}).get("containers") or []
    return f"{sum(1 for s in statuses if s.get('ready'))}/{len(containers)}"


def _pod_status(pod: Json) -> str:
    if (pod.get("metadata") or {}).get("deletionTimestamp"):
        return "Terminating"
    for status in (pod.get("status") or {}).get("containerStatuses") or []:
        waiting = (status.get("state") or {}).get("waiting")
        if waiting and waiting.get("reason"):
            return str(waiting["reason"])
    return str((pod.get("status") or {}).get("phase") or "Pending")


def _restarts(pod: Json) -> int:
    return sum(
        int(s.get("restartCount") or 0) for s in (pod.get("status") or {}).get("containerStatuses") or []
    )


def _node_status(node: Json) -> str:
    conditions = (node.get("status") or {}).get("conditions") or []
    ready = next((c for c in conditions if c.get("type") == "Ready"), None)
    return "Ready" if ready is not None and ready.get("status") == "True" else "NotReady"


def _internal_ip(node: Json) -> str:
    addresses = (node.get("status") or {}).get("addresses") or []
    return next((str(a["address"]) for a in addresses if a.get("type") == "InternalIP"), NONE)


def _node_info(node: Json, key: str) -> str:
    return str(((node.get("status") or {}).get("nodeInfo") or {}).get(key) or "")


BUILTIN: dict[str, list[Column]] = {
    "Pod": [
        NAME,
        Column("Ready", "string", _pod_ready, "Ready containers / containers."),
        Column("Status", "string", _pod_status, "The pod's phase, or why a container waits."),
        Column("Restarts", "string", lambda p: str(_restarts(p)), "Container restarts."),
        AGE,
        Column("IP", "string", lambda p: (p.get("status") or {}).get("podIP") or NONE, priority=1),
        Column("Node", "string", lambda p: (p.get("spec") or {}).get("nodeName") or NONE, priority=1),
        Column("Nominated Node", "string", lambda p: NONE, priority=1),
        Column("Readiness Gates", "string", lambda p: NONE, priority=1),
    ],
    "Node": [
        NAME,
        Column("Status", "string", _node_status),
        Column("Roles", "string", lambda n: NONE),
        AGE,
        Column("Version", "string", lambda n: _node_info(n, "kubeletVersion")),
        Column("Internal-IP", "string", _internal_ip, priority=1),
        Column("External-IP", "string", lambda n: NONE, priority=1),
        Column("OS-Image", "string", lambda n: _node_info(n, "osImage"), priority=1),
        Column("Kernel-Version", "string", lambda n: _node_info(n, "kernelVersion"), priority=1),
        Column("Container-Runtime", "string", lambda n: _node_info(n, "containerRuntimeVersion"), priority=1),
    ],
}


def table(objects: Sequence[Json], columns: Sequence[Column], metadata: Json) -> Json:
    """The `meta.k8s.io/v1` Table of `objects`, each row with its object's metadata (as `includeObject`'s
    default, Metadata, gives it)."""
    rows = [
        {
            "cells": [column.cell(obj) for column in columns],
            "object": {
                "kind": "PartialObjectMetadata",
                "apiVersion": "meta.k8s.io/v1",
                "metadata": obj.get("metadata") or {},
            },
        }
        for obj in objects
    ]
    return {
        "kind": "Table",
        "apiVersion": "meta.k8s.io/v1",
        "metadata": metadata,
        "columnDefinitions": [column.definition() for column in columns],
        "rows": rows,
    }
