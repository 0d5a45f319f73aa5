"""The hand-over never lets a pod start a task that another pod may still be processing (Contract 3).

A generation that drops an active task without naming a new owner (a desired assignment that omits it, as a
stop-the-world rebalance does) stops it on its owner just like a move does, so it must be tracked as a
revocation too: otherwise the next generation could start the task elsewhere before the old owner has even
read the one that stopped it.
"""

from __future__ import annotations

from smoothscale.contract.publication import EMPTY, ClientAssignment
from smoothscale.control.handover import is_settled, next_publication

ALIVE = frozenset({"p-0", "p-1"})


def test_a_dropped_active_waits_for_its_owner_before_starting_elsewhere() -> None:
    first = next_publication(
        EMPTY, {"p-0": ClientAssignment(active=["0_0"]), "p-1": ClientAssignment()}, {}, ALIVE
    )
    assert first is not None and first.active_owner() == {"0_0": "p-0"}

    dropped = next_publication(
        first, {"p-0": ClientAssignment(), "p-1": ClientAssignment()}, {"p-0": 1}, ALIVE
    )
    assert dropped is not None
    assert dropped.active_owner() == {}
    assert dropped.revoking["0_0"].owner == "p-0", "stopping a task is a revocation, tracked until acked"

    moved = {"p-0": ClientAssignment(), "p-1": ClientAssignment(active=["0_0"])}
    early = next_publication(dropped, moved, {"p-0": first.generation, "p-1": dropped.generation}, ALIVE)
    assert early is None or "0_0" not in early.active_owner(), (
        "p-0 has not read the generation that stops 0_0"
    )

    acked = {"p-0": dropped.generation, "p-1": dropped.generation}
    after = next_publication(early or dropped, moved, acked, ALIVE)
    assert after is not None and after.active_owner() == {"0_0": "p-1"}
    assert is_settled(after, moved)


def test_a_dropped_active_of_a_gone_pod_needs_no_wait() -> None:
    first = next_publication(EMPTY, {"p-0": ClientAssignment(active=["0_0"])}, {}, ALIVE)
    assert first is not None
    moved = {"p-1": ClientAssignment(active=["0_0"])}
    after = next_publication(first, moved, {}, frozenset({"p-1"}))
    assert after is not None and after.active_owner() == {"0_0": "p-1"}
    assert not after.revoking
