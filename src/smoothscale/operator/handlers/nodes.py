"""Nodes: their zones, indexed by node name (the planner's racks)."""

from __future__ import annotations

from typing import Any

import kopf

from smoothscale.control.zones import node_zone

from ..context import OperatorContext


def register(registry: kopf.OperatorRegistry, context: OperatorContext) -> None:
    @kopf.index("", "v1", "nodes", registry=registry, id="zones_by_node")
    def zones_by_node(name: str, body: kopf.Body, **_: Any) -> dict[str, str]:
        zone = node_zone(body)
        # A node without a zone label is left out: the zone of its pods is unknown.
        return {name: zone} if zone is not None else {}
