"""maxWarmupReplicas holds in every published generation, hand-overs included.

While an active moves, its new owner keeps restoring it as the warmup it was until the old owner has
stopped it; that copy is a restoring copy like any other warmup (it shows in the status' warmups), so new
warmups wait for its slot instead of being published beside it.
"""

from __future__ import annotations

from smoothscale.contract.publication import EMPTY
from smoothscale.contract.publication import ClientAssignment as A
from smoothscale.control.handover import next_publication

ALIVE = {"p0", "p1", "p2"}


def warmups(assignment: dict[str, A]) -> int:
    return sum(len(a.warmup) for a in assignment.values())


def test_hand_over_copies_count_against_the_warmup_cap() -> None:
    """Two warmups (the cap) caught up; the plan makes them active on their pods and starts two new ones.
    While p0 has not stopped the two moving tasks, p1 keeps them as warmups: the two new warmups wait."""
    start = next_publication(
        EMPTY,
        {"p0": A(active=["0_0", "0_1", "0_2", "0_3"]), "p1": A(warmup=["0_0", "0_1"])},
        {},
        ALIVE,
        max_warmups=2,
    )
    assert start is not None and warmups(start.assignment) == 2
    desired = {
        "p0": A(active=["0_2", "0_3"]),
        "p1": A(active=["0_0", "0_1"]),
        "p2": A(warmup=["0_2", "0_3"]),
    }
    acked = dict.fromkeys(ALIVE, start.generation)
    revoking = next_publication(start, desired, acked, ALIVE, max_warmups=2)
    assert revoking is not None and set(revoking.revoking) == {"0_0", "0_1"}
    assert revoking.assignment["p1"].warmup == ["0_0", "0_1"]
    assert warmups(revoking.assignment) <= 2, revoking.assignment
    # Once p0 has stopped them, they start on p1 and the new warmups take the freed slots.
    acked = dict.fromkeys(ALIVE, revoking.generation)
    started = next_publication(revoking, desired, acked, ALIVE, max_warmups=2)
    assert started is not None and started.assignment["p1"].active == ["0_0", "0_1"]
    assert started.assignment["p2"].warmup == ["0_2", "0_3"] and warmups(started.assignment) == 2
