"""Zones (the planner's racks) from the nodes the pods run on.

A pod's zone is the `topology.kubernetes.io/zone` label of its node, as the scheduler and every zonal
volume see it. A node without the label has no zone: the pod's zone is unknown (None), not a zone named
"unknown". The planner turns rack awareness off for such pods only (KIP-925 does so when racks are
unknown), and the status says so (the RackAwarenessDegraded condition and Event).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from smoothscale.contract.shared_names import ZONE_LABEL

# Contract 3's names, re-exported from their one home (the client library's contract).
__all__ = ["ZONE_LABEL"]


def node_zone(body: Mapping[str, Any]) -> str | None:
    """The zone of a node object, or None when it has no zone label."""
    labels = (body.get("metadata") or {}).get("labels") or {}
    zone = str(labels.get(ZONE_LABEL) or "").strip()
    return zone or None


def pod_zone(node: str | None, zones: Mapping[str, str]) -> str | None:
    """The zone of the node a pod runs on, given each known node's zone; None when unknown."""
    if node is None:
        return None
    return zones.get(node)
