"""The Java bridge reads the assignment ConfigMap exactly as the operator writes it.

`bridge/smoothscale-streams/src/test/resources/operator-configmap.json` is a ConfigMap built by the
operator's own `build_assignment_configmap`; the bridge's JUnit tests decode it. This test fails the moment
the operator writes something else, so the two sides cannot drift apart unnoticed. Regenerate the file with
`python tests/bridge/test_bridge_contract.py` after an intended change to the format.
"""

from __future__ import annotations

import json
from pathlib import Path

from smoothscale.contract.publication import ClientAssignment, Publication, Revocation
from smoothscale.operator.appref import AppRef
from smoothscale.operator.publish import build_assignment_configmap

FIXTURE = Path(__file__).parents[2] / "bridge/smoothscale-streams/src/test/resources/operator-configmap.json"
LONG_POD = "orders-enrichment-with-a-very-long-statefulset-name-1234567-0"


def operator_configmap() -> dict[str, object]:
    publication = Publication(
        generation=7,
        assignment={
            "orders-0": ClientAssignment(active=["0_0", "0_1", "1_0"], standby=["0_3"]),
            LONG_POD: ClientAssignment(active=["0_3", "1_1"], standby=["0_0"], warmup=["0_1"]),
        },
        revoking={"0_2": Revocation(owner="orders-0", generation=7)},
    )
    return build_assignment_configmap(AppRef("shop", "orders", "uid-1"), publication)


def test_the_bridges_fixture_is_what_the_operator_writes() -> None:
    assert json.loads(FIXTURE.read_text()) == operator_configmap()


if __name__ == "__main__":
    FIXTURE.write_text(json.dumps(operator_configmap(), indent=2, sort_keys=True) + "\n")
