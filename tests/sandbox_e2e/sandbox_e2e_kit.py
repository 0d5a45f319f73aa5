"""Steps and checks of the end-to-end tests (a uniquely named module: tests/ has no packages)."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field

from smoothscale.sandbox import invariants
from smoothscale.sandbox.demo import APP, demo_app, demo_tasks
from smoothscale.sandbox.harness import Sandbox
from smoothscale.sandbox.observe import Snapshot, settle

PLANNED_MOVE_BOUND = 8.0
"""Seconds a task may go unprocessed during a step in which tasks move between pods on purpose: a loose bound
on everything in the step (a hand-over itself takes well under a second: test_sandbox_e2e_handover.py)."""
CRASH_BOUND = 15.0
"""Seconds a task may go unprocessed when its pod crashes: the restart, then the restore from the volume."""
STEP_TIMEOUT = 90.0


Check = Callable[[Snapshot], bool]


@dataclass
class Run:
    """The steps of one test, and everything they found broken."""

    sandbox: Sandbox
    violations: list[str] = field(default_factory=list)

    def start(self, replicas: int = 3) -> Snapshot:
        self.sandbox.apply(demo_app(replicas=replicas))
        return self.settled("create")

    def settled(self, step: str, *, also: Check | None = None) -> Snapshot:
        options = {} if also is None else {"also": also}
        snapshot = settle(self.sandbox, APP, step, timeout=STEP_TIMEOUT, **options)
        assert snapshot is not None, f"{step}: not settled within {STEP_TIMEOUT:.0f} s"
        return snapshot

    def step(
        self, name: str, bound: float, act: Callable[[], object], *, also: Check | None = None
    ) -> Snapshot:
        """Run `act()`, wait until settled, and check that no task went unprocessed longer than `bound`
        from the moment of `act()` to a second after the app settled."""
        started = time.time()
        act()
        snapshot = self.settled(name, also=also)
        time.sleep(1.0)
        gaps = invariants.unprocessed_seconds(self.sandbox.records(), demo_tasks(), started, time.time())
        self.violations += [f"{name}: {text}" for text in invariants.gaps_beyond(gaps, bound)]
        return snapshot

    def finish(self, last: Snapshot) -> None:
        """The checks of every run: nothing processed twice at once, every task once, balanced over pods
        and zones."""
        records = self.sandbox.records()
        publication = self.sandbox.publication(APP)
        zone_of = {pod.name: pod.zone for pod in last.pods}
        self.violations += invariants.concurrent_processing(records)
        self.violations += invariants.imbalance(publication, zone_of)
        self.violations += invariants.every_task_once(publication, demo_tasks())
        assert self.violations == [], "\n".join(self.violations)
