"""Where the kubelet stand-ins bind a pod: one node per zone, and a zone the pod accepts.

The kubelet stand-in (`kubelet.py`) creates these nodes and binds with `choose_zone`, whatever runtime runs
its pods.

A pod may require zones with a `nodeSelector` on the zone label or a required node affinity on it (`In`,
`NotIn`, `Exists`, `DoesNotExist`); among the zones it accepts, it goes to the one with the fewest pods (the
first in order on a tie), which spreads an app over the zones as a topology spread constraint would.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from smoothscale.contract.shared_names import ZONE_LABEL


def node_name(zone: str) -> str:
    """The sandbox's node in `zone`."""
    return f"sandbox-{zone}"


def node_body(zone: str) -> dict[str, Any]:
    """The Node object of `zone`, labelled as a real node in that zone would be."""
    name = node_name(zone)
    labels = {ZONE_LABEL: zone, "kubernetes.io/hostname": name, "kubernetes.io/os": "linux"}
    return {"apiVersion": "v1", "kind": "Node", "metadata": {"name": name, "labels": labels}}


def accepted_zones(pod_spec: Mapping[str, Any], zones: Sequence[str]) -> list[str]:
    """The zones whose node the pod's nodeSelector and required node affinity accept, in `zones` order."""
    selected = (pod_spec.get("nodeSelector") or {}).get(ZONE_LABEL)
    accepted = [zone for zone in zones if selected is None or zone == selected]
    affinity = ((pod_spec.get("affinity") or {}).get("nodeAffinity") or {}).get(
        "requiredDuringSchedulingIgnoredDuringExecution"
    ) or {}
    terms = affinity.get("nodeSelectorTerms") or []
    if terms:  # terms are ORed, the expressions of a term ANDed
        accepted = [zone for zone in accepted if any(_term_accepts(term, zone) for term in terms)]
    return accepted


def _term_accepts(term: Mapping[str, Any], zone: str) -> bool:
    for expression in term.get("matchExpressions") or []:
        if expression.get("key") != ZONE_LABEL:
            continue  # the sandbox's nodes carry no other label worth selecting on
        values = expression.get("values") or []
        operator = expression.get("operator")
        if (
            (operator == "In" and zone not in values)
            or (operator == "NotIn" and zone in values)
            or operator == "DoesNotExist"
        ):
            return False
    return True


def choose_zone(pod_spec: Mapping[str, Any], zones: Sequence[str], load: Mapping[str, int]) -> str | None:
    """The accepted zone with the fewest pods, or None when the pod accepts none (it stays Pending)."""
    accepted = accepted_zones(pod_spec, zones)
    return min(accepted, key=lambda zone: load.get(zone, 0)) if accepted else None
