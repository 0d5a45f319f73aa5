"""The scrape's cadence (`control.scrapecadence`): the pods a decision waits on every round (all of them
after a change the step did not see), each other pod once per steady interval, and a pod never read at
once."""

from hypothesis import given
from hypothesis import strategies as st

from smoothscale.control.scrapecadence import ScrapeCadence, due, next_read_in

CADENCE = ScrapeCadence(interval=1.0, steady_interval=15.0)
PODS = [f"pod-{n}" for n in range(5)]


def test_a_change_the_step_did_not_see_reads_every_pod() -> None:
    assert due(PODS, dict.fromkeys(PODS, 99.5), 100.0, read_often=None, cadence=CADENCE) == frozenset(PODS)


def test_a_moving_app_reads_the_pods_it_waits_on_every_round_and_the_others_at_the_steady_cadence() -> None:
    last = {"pod-0": 99.5, "pod-1": 99.5, "pod-2": 85.0, "pod-3": 99.5}
    assert due(PODS, last, 100.0, read_often={"pod-1"}, cadence=CADENCE) == {"pod-1", "pod-2", "pod-4"}


def test_a_steady_app_reads_a_new_pod_at_once_and_the_others_when_their_interval_is_up() -> None:
    last = {"pod-0": 94.0, "pod-1": 85.0, "pod-2": 99.0}
    pods = ["pod-0", "pod-1", "pod-2", "pod-3"]
    assert due(pods, last, 100.0, read_often=frozenset(), cadence=CADENCE) == {"pod-1", "pod-3"}
    assert due(pods[:1], last, 100.0, read_often=frozenset(), cadence=CADENCE) == set()


def test_a_steady_read_due_brings_along_the_pods_read_more_than_half_an_interval_ago() -> None:
    last = {"pod-0": 90.0, "pod-1": 85.0, "pod-2": 99.0, "pod-3": 93.5}
    assert due(PODS[:4], last, 100.0, read_often=frozenset(), cadence=CADENCE) == {"pod-0", "pod-1"}
    assert due(PODS[:4], last, 100.0, read_often={"pod-1"}, cadence=CADENCE) == {"pod-1"}, (
        "the pods a decision waits on are read anyway: no steady read is due yet"
    )


@given(st.lists(st.floats(0.0, 15.0), min_size=2, max_size=12), st.lists(st.floats(0.9, 1.1), min_size=1))
def test_an_app_at_rest_comes_to_read_its_pods_in_one_round_per_interval(
    reads: list[float], jitter: list[float]
) -> None:
    """Pods last read at any moments over the last steady interval: the app at rest (its rounds as
    `next_read_in` wakes it, a timer's jitter late) reads all of them in one round from the fourth steady
    interval on, and no pod more often than every half interval."""
    last = {f"pod-{n}": -read for n, read in enumerate(reads)}
    now, rounds = 0.0, 0
    while now < 120.0:
        now += next_read_in(last, now, CADENCE) * jitter[rounds % len(jitter)]
        rounds += 1
        if read := due(last, last, now, read_often=frozenset(), cadence=CADENCE):
            assert all(now - last[pod] >= 7.0 for pod in read)
            assert now < 45.0 or read == last.keys(), f"{sorted(read)} of {sorted(last)} at {now:.1f}"
            last.update(dict.fromkeys(read, now))


@given(st.lists(st.floats(0.9, 1.1), min_size=30, max_size=120), st.floats(1.0, 30.0))
def test_a_steady_pod_is_read_about_once_per_steady_interval(gaps: list[float], steady: float) -> None:
    """Rounds about one interval apart (a timer's jitter): a steady pod is never read twice within half an
    interval less than the steady interval, and never left unread a round longer than that."""
    cadence = ScrapeCadence(interval=1.0, steady_interval=steady)
    now, last = 0.0, {"pod-0": 0.0}
    for gap in gaps:
        now += gap
        if due(["pod-0"], last, now, read_often=frozenset(), cadence=cadence):
            assert now - last["pod-0"] >= steady - 0.5
            last["pod-0"] = now
        assert now - last["pod-0"] < steady + 1.1


def test_an_app_at_rest_sleeps_until_its_first_pod_is_due_a_steady_read() -> None:
    cadence = CADENCE
    read = {"orders-0": 100.0, "orders-1": 104.0}
    assert next_read_in(read, 101.0, cadence) == 13.5
    assert not due(read, read, 101.0 + 13.4, read_often=frozenset(), cadence=cadence)
    assert due(read, read, 101.0 + 13.5, read_often=frozenset(), cadence=cadence) == {"orders-0", "orders-1"}
    assert next_read_in(read, 200.0, cadence) == 1.0, "never less than a round's interval"
    assert next_read_in({}, 200.0, cadence) == 1.0
