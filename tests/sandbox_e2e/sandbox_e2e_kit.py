"""Steps and checks of the end-to-end tests (a uniquely named module: tests/ has no packages)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from smoothscale.sandbox import invariants
from smoothscale.sandbox.demo import APP, demo_app, demo_tasks
from smoothscale.sandbox.harness import Sandbox
from smoothscale.sandbox.observe import Snapshot, observe, settle

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
        snapshot = settle(self.sandbox, APP, step, timeout=STEP_TIMEOUT, also=also or (lambda _: True))
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

    def operator_killed_mid_migration(self) -> None:
        """Scale 3 -> 6, SIGKILL the operator while warmups restore, start it again: it resumes from the
        published assignment and finishes the migration. A task being handed over when the operator died
        waits for it to come back, so no task may go unprocessed longer than a planned move's bound plus the
        time the operator was away (until its first journal line: a loaded machine takes seconds to start
        Python, kopf and OR-Tools)."""
        sandbox = self.sandbox
        self.start(replicas=3)
        started = time.time()
        sandbox.patch_app(APP, {"spec": {"replicas": 6}})
        deadline = time.time() + 60
        while not observe(sandbox, APP, "scale-out").warmups:
            assert time.time() < deadline, "no warmup appeared"
            time.sleep(0.3)
        sandbox.stop_operator(kill=True)
        killed = time.time()
        time.sleep(3)  # the workers carry on without it
        journal = sandbox.journal_file.stat().st_size
        sandbox.start_operator()
        while sandbox.journal_file.stat().st_size == journal:
            assert time.time() < killed + 60, "the restarted operator wrote nothing"
            time.sleep(0.1)
        self.finish_held_up("resumed", 6, started, time.time() - killed)

    def finish_held_up(self, step: str, pods: int, started: float, held_up: float) -> None:
        """The end of a step begun at `started` (epoch seconds) in which the operator was away or a hand-over
        held up for `held_up` seconds: settled on `pods` pods, no task unprocessed longer than a planned
        move's bound plus that, and the checks of every run (`finish`)."""
        last = self.settled(step)
        assert len(last.pods) == pods
        gaps = invariants.unprocessed_seconds(self.sandbox.records(), demo_tasks(), started, time.time())
        self.violations += invariants.gaps_beyond(gaps, PLANNED_MOVE_BOUND + held_up)
        self.finish(last)

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


def processes_using(directory: Path) -> list[int]:
    """Our processes whose environment or command line mentions `directory` (the operator, the workers, a
    control plane)."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            text = (entry / "environ").read_bytes() + (entry / "cmdline").read_bytes()
        except OSError:
            continue
        if str(directory).encode() in text:
            found.append(int(entry.name))
    return found


SMOOTHSCALE = str(Path(sys.executable).with_name("smoothscale"))
DEMO_STEPS = ("create", "scale-out", "scale-in", "host-swap", "pod-crash")
EMBEDDED_DEMO_STEPS = (*DEMO_STEPS, "zone-outage")
"""The embedded demo's pods hold leases: its walk ends with a zone's outage."""


def run_kafka_demo(*args: str) -> tuple[str, dict[str, dict[str, Any]]]:
    """`smoothscale demo --json ARGS` against real brokers: its output and the figures of each step, once it
    exited 0 having walked every step, each settled with Kafka's view of the group the plan and balanced, and
    the scale-out and the scale-in each moved a share of the tasks."""
    result = subprocess.run(
        [SMOOTHSCALE, "demo", "--json", *args], capture_output=True, text=True, timeout=1400, check=False
    )
    stdout = result.stdout
    said = stdout[-4000:] + result.stderr[-3000:]
    assert result.returncode in (0, 1), said
    try:
        figures = json.loads(stdout.strip().splitlines()[-1])
    except (IndexError, json.JSONDecodeError) as error:  # the demo stopped before its figures
        raise AssertionError(f"no JSON line last (exit {result.returncode}): {said}") from error
    steps: dict[str, dict[str, Any]] = figures["steps"]
    assert tuple(steps) == DEMO_STEPS, stdout[-4000:]
    for name, step in steps.items():
        assert step["settled_s"] is not None, (name, step)
        assert (step["plan_matches_kafka"], step["balanced"]) == (True, True), (name, step)
    assert (result.returncode, figures["exit_status"]) == (0, 0), stdout[-3000:]
    for name in ("scale-out", "scale-in"):
        assert steps[name]["moved"] >= 4, steps[name]
    return stdout, steps


def run_demo(*args: str, timeout: float) -> str:
    """`smoothscale demo ARGS` as a user runs it: its output, once it succeeded, walked every step and
    found every invariant held."""
    result = subprocess.run(
        [SMOOTHSCALE, "demo", *args], capture_output=True, text=True, timeout=timeout, check=False
    )
    assert result.returncode == 0, result.stdout[-4000:] + result.stderr[-3000:]
    for step in EMBEDDED_DEMO_STEPS:
        assert f"[{step}]" in result.stdout
    assert "all invariants held" in result.stdout
    return result.stdout
