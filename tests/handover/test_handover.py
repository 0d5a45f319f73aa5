"""The two-phase hand-over: a moving active is revoked in one generation and started in a later one, only
after the old owner has reported the revoking generation or is gone."""

from __future__ import annotations

import random

import pytest

from smoothscale.contract.configmap import decode_publication, encode_publication
from smoothscale.contract.publication import EMPTY, Publication
from smoothscale.contract.publication import ClientAssignment as A
from smoothscale.control.handover import is_settled, next_publication


def publish(
    published: Publication, desired: dict[str, A], acked: dict[str, int], alive: set[str]
) -> Publication:
    nxt = next_publication(published, desired, acked, alive)
    assert nxt is not None, "expected a new generation"
    assert nxt.generation == published.generation + 1
    return nxt


def actives(pub: Publication) -> dict[str, str]:
    return pub.active_owner()


def test_first_generation_assigns_everything_at_once() -> None:
    desired = {"p0": A(active=["0_0"]), "p1": A(active=["0_1"], standby=["0_0"])}
    pub = publish(EMPTY, desired, {}, {"p0", "p1"})
    assert pub.generation == 1 and is_settled(pub, desired)
    assert next_publication(pub, desired, {"p0": 1, "p1": 1}, {"p0", "p1"}) is None


def test_a_moving_active_is_revoked_first_and_started_after_the_ack() -> None:
    alive = {"p0", "p1"}
    start = publish(EMPTY, {"p0": A(active=["0_0", "0_1"]), "p1": A(warmup=["0_1"])}, {}, alive)
    desired = {"p0": A(active=["0_0"], standby=["0_1"]), "p1": A(active=["0_1"])}
    revoke = publish(start, desired, {"p0": 1, "p1": 1}, alive)
    assert "0_1" not in revoke.assignment["p0"].active and "0_1" in revoke.assignment["p0"].standby
    assert "0_1" not in revoke.assignment["p1"].active, "p0 may still be processing 0_1"
    assert "0_1" in revoke.assignment["p1"].warmup, "the new owner keeps restoring meanwhile"
    assert revoke.revoking["0_1"].owner == "p0" and revoke.revoking["0_1"].generation == 2
    # p0 has not reported generation 2 yet: nothing may change.
    assert next_publication(revoke, desired, {"p0": 1, "p1": 2}, alive) is None
    start_it = publish(revoke, desired, {"p0": 2, "p1": 2}, alive)
    assert actives(start_it)["0_1"] == "p1" and not start_it.revoking
    assert is_settled(start_it, desired)


def test_a_dead_old_owner_needs_no_ack() -> None:
    start = publish(EMPTY, {"p0": A(active=["0_0"])}, {}, {"p0", "p1"})
    desired = {"p1": A(active=["0_0"])}
    moved = publish(start, desired, {}, {"p1"})
    assert actives(moved) == {"0_0": "p1"} and not moved.revoking


def test_a_task_moves_only_once_its_new_pod_follows_the_assignment() -> None:
    """A pod just created has no client running yet: revoking a task for it would stop the task for as long
    as the pod takes to start. The task stays where it runs until the new pod is ready, then moves."""
    alive = {"p0", "p1"}
    start = publish(EMPTY, {"p0": A(active=["0_0", "0_1"])}, {}, alive)
    desired = {"p0": A(active=["0_0"]), "p1": A(active=["0_1"])}
    assert next_publication(start, desired, {"p0": 1}, alive, ready={"p0"}) is None, "p1 is not up yet"
    revoke = next_publication(start, desired, {"p0": 1, "p1": 0}, alive, ready={"p0", "p1"})
    assert revoke is not None and revoke.revoking["0_1"].owner == "p0"
    moved = publish(revoke, desired, {"p0": 2, "p1": 2}, alive)
    assert actives(moved) == {"0_0": "p0", "0_1": "p1"}
    # With nobody running the task, there is no reason to wait: it starts on the pod that will take it.
    orphan = next_publication(start, desired, {}, {"p1"}, ready=set())
    assert orphan is not None and actives(orphan) == {"0_1": "p1", "0_0": "p0"}


def test_a_move_cancelled_mid_hand_over_goes_back_to_the_owner_at_once() -> None:
    alive = {"p0", "p1"}
    start = publish(EMPTY, {"p0": A(active=["0_0"])}, {}, alive)
    revoke = publish(start, {"p1": A(active=["0_0"])}, {"p0": 1}, alive)
    back = publish(revoke, {"p0": A(active=["0_0"])}, {"p0": 1}, alive)
    assert actives(back) == {"0_0": "p0"} and not back.revoking


def test_retargeting_mid_hand_over_still_waits_for_the_old_owner() -> None:
    alive = {"p0", "p1", "p2"}
    start = publish(EMPTY, {"p0": A(active=["0_0"])}, {}, alive)
    revoke = publish(start, {"p1": A(active=["0_0"])}, {"p0": 1}, alive)
    elsewhere = next_publication(revoke, {"p2": A(active=["0_0"])}, {"p0": 1}, alive)
    assert elsewhere is None or "0_0" not in actives(elsewhere), "p0 has not acknowledged yet"


def test_restart_resumes_from_the_published_bytes() -> None:
    alive = {"p0", "p1"}
    start = publish(EMPTY, {"p0": A(active=["0_0"])}, {}, alive)
    revoke = publish(start, {"p1": A(active=["0_0"])}, {"p0": 1}, alive)
    restored = decode_publication(encode_publication(revoke))
    assert restored == revoke
    assert next_publication(restored, {"p1": A(active=["0_0"])}, {"p0": 1}, alive) is None
    assert actives(publish(restored, {"p1": A(active=["0_0"])}, {"p0": 2}, alive)) == {"0_0": "p1"}


def test_garbage_bytes_are_refused() -> None:
    with pytest.raises(ValueError, match="gzip"):
        decode_publication(b"not gzip")


@pytest.mark.parametrize("seed", range(25))
def test_random_plans_never_run_a_task_twice(seed: int) -> None:
    """Random desired assignments and random, lagging acks: at every instant the set of pods that may be
    processing a task (told so by a generation they have not yet replaced) has at most one member."""
    rng = random.Random(seed)
    pods = [f"p{i}" for i in range(4)]
    tasks = [f"0_{i}" for i in range(6)]
    history: list[Publication] = []
    published = EMPTY
    acked = dict.fromkeys(pods, 0)
    target: dict[str, A] = {pods[0]: A(active=list(tasks))}
    for _ in range(60):
        if rng.random() < 0.5:
            desired: dict[str, A] = {p: A() for p in pods}
            for task in tasks:
                owner = rng.choice(pods)
                desired[owner] = A(active=[*desired[owner].active, task])
            target = desired
        for pod in pods:  # pods catch up on generations at random
            if rng.random() < 0.5:
                acked[pod] = published.generation
        nxt = next_publication(published, target, acked, set(pods))
        if nxt is not None:
            published = nxt
            history.append(nxt)
        for task in tasks:
            # A pod applies generations in order: between the one it acknowledged and the newest, it may
            # be running a task that any of them gives it.
            running = {
                pod
                for pod in pods
                for pub in history
                if acked[pod] <= pub.generation and task in pub.assignment.get(pod, A()).active
            }
            assert len(running) <= 1, (task, running, published.generation)
        listed = [t for a in published.assignment.values() for t in a.active]
        assert len(listed) == len(set(listed)), "no generation lists a task active twice"
