"""A container's resources through the downward API (`valueFrom.resourceFieldRef`), as the kubelet gives them.

Pure, given what the node offers. The kubelet's rules (its `defaultPodLimitsForDownwardAPI` and Kubernetes'
`ExtractContainerResourceValue`): a limit the container does not set is the node's allocatable amount; a
request it does not set is its limit when it sets one (the API server's defaulting), else 0; the value is
divided by the `divisor` (default 1) and rounded up, CPU in millicores first (`250m` over `1` is 1), memory
and ephemeral storage in bytes. The stand-in's pods share the machine, so its node offers the machine's CPUs
and memory (`machine_allocatable`).
"""

from __future__ import annotations

import math
import os
from collections.abc import Callable, Mapping
from decimal import Decimal
from pathlib import Path
from typing import Any

from kubernetes.utils import parse_quantity

RESOURCES = ("cpu", "memory", "ephemeral-storage")

Allocatable = Callable[[], Mapping[str, Decimal]]
"""What the node offers of each resource, asked only when a limit is not set."""


def machine_allocatable() -> dict[str, Decimal]:
    """This machine's CPUs, memory (`MemTotal`) and the free space where the stand-in runs, as a node's
    allocatable with nothing reserved."""
    memory = next(
        int(line.split()[1]) * 1024
        for line in Path("/proc/meminfo").read_text().splitlines()
        if line.startswith("MemTotal:")
    )
    disk = os.statvfs(".")
    return {
        "cpu": Decimal(os.cpu_count() or 1),
        "memory": Decimal(memory),
        "ephemeral-storage": Decimal(disk.f_bavail * disk.f_frsize),
    }


def resource_value(
    pod: Mapping[str, Any], container: Mapping[str, Any], ref: Mapping[str, Any], allocatable: Allocatable
) -> str | None:
    """The value of a `resourceFieldRef` in `container`'s env (of the container it names, if it names one),
    or None for a resource the downward API does not offer."""
    kind, _, resource = str(ref.get("resource") or "").partition(".")
    if kind not in ("limits", "requests") or resource not in RESOURCES:
        return None
    named = ref.get("containerName")
    if named:
        containers = (pod.get("spec") or {}).get("containers") or []
        container = next((c for c in containers if c.get("name") == named), {})
    resources = container.get("resources") or {}
    limit = (resources.get("limits") or {}).get(resource)
    request = (resources.get("requests") or {}).get(resource)
    if kind == "limits":
        amount = parse_quantity(limit) if limit is not None else Decimal(allocatable()[resource])
    else:
        amount = parse_quantity(request if request is not None else limit if limit is not None else 0)
    divisor = parse_quantity(ref.get("divisor") or 1) or Decimal(1)  # a zero divisor means 1
    if resource == "cpu":  # both in whole millicores, rounded up, as Quantity.MilliValue()
        return str(math.ceil(math.ceil(amount * 1000) / math.ceil(divisor * 1000)))
    return str(math.ceil(math.ceil(amount) / math.ceil(divisor)))
