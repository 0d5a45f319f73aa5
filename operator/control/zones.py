"""Zones (the planner's racks) from the nodes the pods run on.

A pod's zone is the `topology.kubernetes.io/zone` label of its node, as the scheduler and every zonal
volume see it. A node without the label still gets a rack, `UNKNOWN_ZONE`, shared by all such nodes: the
planner then treats them as one rack, which is right for single-zone clusters and keeps rack-aware cost
pessimistic where the topology is unknown.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from smoothscale.client.contract import ZONE_LABEL

# Contract 3's names, re-exported from their one home (the client library's contract).
__all__ = ["ZONE_LABEL"]


UNKNOWN_ZONE: Final = "unknown"


def node_zone(body: Mapping[str, Any]) -> str:
    """The zone of a node object."""
    labels = (body.get("metadata") or {}).get("labels") or {}
    zone = str(labels.get(ZONE_LABEL) or "").strip()
    return zone or UNKNOWN_ZONE


def pod_zone(node: str | None, zones: Mapping[str, str]) -> str:
    """The zone of the node a pod runs on, given each known node's zone."""
    if node is None:
        return UNKNOWN_ZONE
    return zones.get(node, UNKNOWN_ZONE)
