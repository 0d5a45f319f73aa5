"""What the cross-version tests share (`tests/contract/test_cross_version.py` for the client library,
`tests/bridge/test_bridge_cross_version.py` for the bridge): the releases they pin, one publication, and this
operator's ConfigMap of it as a later release would write it."""

from __future__ import annotations

import base64
import gzip
import json
from typing import Any

from smoothscale.contract import shared_names as contract
from smoothscale.contract.publication import ClientAssignment, Publication
from smoothscale.operator.appref import AppRef
from smoothscale.operator.publish import build_assignment_configmap

FIRST_VERSIONED = "bb172b8d763de51bc06028b6f5a3fed398a7b8e5"
"""The first commit whose readers follow versioned publications: the oldest release a later one must keep."""
BEFORE_VERSIONS = "3edcfbf2619407188d5e9562ff4d810c4941c1c3"
"""The last commit before versions: its operator wrote publications without one."""
POD = "orders-1"
PUBLICATION = Publication(
    generation=3,
    assignment={
        "orders-0": ClientAssignment(active=["0_0", "0_2"], standby=["0_1"]),
        POD: ClientAssignment(active=["0_1"], standby=["0_0"], warmup=["0_2"]),
    },
)
FOLLOWED = {"0_1": "active", "0_0": "standby", "0_2": "warmup"}
"""POD's roles in PUBLICATION."""


def later_operator(changes: dict[str, Any]) -> dict[str, Any]:
    """This operator's ConfigMap for PUBLICATION, as a later release would write it: `changes` to the JSON,
    and a field added to POD's roles."""
    configmap = build_assignment_configmap(AppRef("shop", "orders", "uid-1"), PUBLICATION)
    document = json.loads(gzip.decompress(base64.b64decode(configmap["binaryData"][contract.ASSIGNMENT_KEY])))
    document.update(changes)
    document["assignment"][POD]["pausedUntil"] = "a field of a pod's roles a later release adds"
    raw = gzip.compress(json.dumps(document).encode(), mtime=0)
    configmap["binaryData"][contract.ASSIGNMENT_KEY] = base64.b64encode(raw).decode()
    return configmap
