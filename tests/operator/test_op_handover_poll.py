"""Between rounds, the operator follows a pending hand-over by polling only the pods it waits on."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime

from smoothscale.contract.publication import ClientAssignment, Publication, Revocation
from smoothscale.control.handover import awaited_owners, handover_poll_delay
from smoothscale.operator.appref import AppRef
from smoothscale.operator.reconcile import AppObject
from smoothscale.operator.runtime import AppRuntime

REVOKING = Publication(
    generation=7,
    assignment={"p0": ClientAssignment(active=["0_0"]), "p1": ClientAssignment(), "p2": ClientAssignment()},
    revoking={"0_1": Revocation(owner="p1", generation=7), "0_2": Revocation(owner="p2", generation=6)},
)


def test_only_the_old_owners_that_have_not_acknowledged_are_awaited() -> None:
    assert awaited_owners(REVOKING, {"p0": 7, "p1": 6, "p2": 6}, {"p0", "p1", "p2"}) == {"p1"}
    assert awaited_owners(REVOKING, {"p1": 5, "p2": 5}, {"p0", "p1", "p2"}) == {"p1", "p2"}
    assert awaited_owners(REVOKING, {}, {"p0"}) == set(), "a gone pod is waited for by nobody"
    assert awaited_owners(Publication(generation=3), {}, {"p0"}) == set()


def test_polls_start_fast_and_thin_out_the_longer_a_hand_over_waits() -> None:
    delays = [handover_poll_delay(waited, 0.1, 5.0) for waited in (0.0, 0.5, 1.0, 3.0, 20.0, 600.0)]
    assert delays == [0.1, 0.1, 0.1, 0.3, 2.0, 5.0]
    waited, polls = 0.0, 0
    while waited < 60:
        waited += handover_poll_delay(waited, 0.1, 5.0)
        polls += 1
    assert polls < 60, "a minute-long hand-over costs a few dozen polls, not 600"


class FakeReconciler:
    """A reconciler whose hand-over waits for `acknowledge_after` polls."""

    def __init__(self, acknowledge_after: int) -> None:
        self.app = AppRef("default", "orders", "uid")
        self.rounds = 0
        self.polls = 0
        self.published_at_poll: int | None = None
        self._acknowledge_after = acknowledge_after
        self.interval = 30.0

    async def reconcile(self, _: AppObject) -> None:
        self.rounds += 1

    def failed(self) -> None:
        raise AssertionError("no round fails here")

    def wake_at(self) -> datetime | None:
        return None

    def next_round_in(self) -> float:
        return self.interval

    def handover_poll_delay(self) -> float | None:
        return None if self.published_at_poll is not None else 0.01

    async def poll_handover(self) -> None:
        self.polls += 1
        if self.polls >= self._acknowledge_after:
            self.published_at_poll = self.polls  # acknowledged: the next generation goes out now


async def _run_for(reconciler: FakeReconciler, interval: float, seconds: float) -> None:
    """The app's loop around `reconciler`, scraping every `interval`, for `seconds`."""
    reconciler.interval = interval
    runtime = AppRuntime(reconciler, interval=interval, debounce=0.0, clock=lambda: datetime.now(UTC))  # type: ignore[arg-type]
    running = asyncio.create_task(runtime.run(lambda: AppObject(body={}, zones={})))
    await asyncio.sleep(seconds)
    runtime.stop()
    await asyncio.wait_for(running, timeout=5)


async def test_a_hand_over_completes_between_two_rounds() -> None:
    reconciler = FakeReconciler(acknowledge_after=3)
    await _run_for(reconciler, interval=30.0, seconds=0.5)
    assert reconciler.rounds == 1, "polls are not rounds: the next round is 30 s away"
    assert reconciler.published_at_poll == 3 and reconciler.polls == 3, "no poll once nothing is awaited"


class NowReconciler(FakeReconciler):
    """A reconciler whose every step wants the next round (its `wake_at` is the step's own time)."""

    def wake_at(self) -> datetime | None:
        return datetime.now(UTC)

    def handover_poll_delay(self) -> float | None:
        return None


async def test_a_step_that_wants_every_round_waits_for_the_next_scrape_not_less() -> None:
    reconciler = NowReconciler(acknowledge_after=1)
    await _run_for(reconciler, interval=0.2, seconds=0.5)
    assert reconciler.rounds <= 4, "a round every scrape interval, no busy loop"
