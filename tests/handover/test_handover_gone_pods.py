"""A pod that is gone and holds nothing disappears from the next generation.

Without this, a generation computed for pods that were since deleted kept their (empty) entries forever once
the plan itself stopped changing: readers of the ConfigMap (people, the pods, the operator deciding whether a
pod name may be reused) saw pods that no longer exist.
"""

from __future__ import annotations

from smoothscale.contract.publication import EMPTY, ClientAssignment
from smoothscale.control.handover import next_publication


def test_an_empty_entry_of_a_gone_pod_is_dropped() -> None:
    desired = {"p-0": ClientAssignment(active=["0_0"]), "p-1": ClientAssignment()}
    first = next_publication(EMPTY, desired, {}, frozenset({"p-0", "p-1"}))
    assert first is not None and set(first.assignment) == {"p-0", "p-1"}

    after = next_publication(first, {"p-0": ClientAssignment(active=["0_0"])}, {}, frozenset({"p-0"}))
    assert after is not None, "p-1 is gone: the next generation must stop naming it"
    assert set(after.assignment) == {"p-0"}
    assert next_publication(after, {"p-0": ClientAssignment(active=["0_0"])}, {}, frozenset({"p-0"})) is None
