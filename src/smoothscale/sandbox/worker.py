"""The sample Streams-style worker: restores per-task state from the simulated changelog, processes its active
tasks, and writes down every interval in which it processed one (`records.py`).

It stands in for a real Kafka Streams app in the demo and the end-to-end tests, so it behaves like one where
the operator can tell: a task assigned active is first restored up to the changelog end (at `restore_rate`
records per second), then processed (at `process_rate`, never beyond the input that exists); standbys and
warmups keep restoring; state stays on the volume when a task leaves (Kafka Streams cleans it up only after
`state.cleanup.delay.ms`), and its lag keeps being reported, as KIP-441 wants; a revoked task is stopped,
under the lock its processing holds, before the callback returns, so the client acknowledges the
generation only after the task has stopped.

One loop thread advances every task each `tick_seconds`; the client's callbacks change roles under the same
lock. Rates are per task.
"""

from __future__ import annotations

import logging
import os
import threading
import time
from dataclasses import dataclass
from pathlib import Path

from smoothscale.client import ClientConfig, Role, StreamsClient, TaskListener

from .changelog import Changelog
from .records import RecordWriter
from .state import StateStore, TaskState

log = logging.getLogger(__name__)

STATE_SAVE_SECONDS = 1.0
"""How often restored and processed state is written to the volume (and always when a role ends)."""


@dataclass(frozen=True)
class WorkerConfig:
    client: ClientConfig
    state_dir: Path
    changelog: Changelog
    restore_rate: float = 20_000.0
    process_rate: float = 2_000.0
    stateless_subtopologies: frozenset[str] = frozenset()
    record_file: Path | None = None
    tick_seconds: float = 0.1
    claim_seconds: float = 0.5
    """How far ahead each processing interval is written to the record file (a claim, renewed before its
    end)."""
    parent_pid: int | None = None
    """Exit when this process is no longer the parent: a kubelet that dies must not leave workers behind."""


@dataclass
class _Task:
    """One task this worker has state for or holds a role of."""

    state: TaskState
    stateful: bool
    role: Role | None = None
    caught_up: bool = False
    restore_from: int = 0
    restore_started: float = 0.0
    lease: tuple[float, float] | None = None
    budget: float = 0.0
    """Fractional records carried over between ticks, so that low rates still make progress."""
    processed: float = 0.0


class SampleWorker(TaskListener):
    """The worker's tasks and their processing; `run()` until `stop` is set."""

    def __init__(self, config: WorkerConfig) -> None:
        self.config = config
        self.pod = config.client.pod
        self.store = StateStore(config.state_dir)
        self.records = RecordWriter(config.record_file, self.pod)
        self.client = StreamsClient(config.client, self)
        self._lock = threading.Lock()
        self._tasks: dict[str, _Task] = {}
        self._last_tick = self._last_save = time.time()
        self._reachable: bool | None = None
        """Whether the operator should reach the metrics endpoint, as last asked (None: nothing asked)."""
        self._load_state()

    # -- life cycle ----------------------------------------------------------------------------------------

    def run(self, stop: threading.Event) -> None:
        """Start the client, advance every task each tick until `stop` (or the parent is gone), then close."""
        self.client.start()
        try:
            while not stop.wait(self.config.tick_seconds):
                if self.config.parent_pid is not None and os.getppid() != self.config.parent_pid:
                    log.warning(
                        "pod %s: parent process %d is gone, exiting", self.pod, self.config.parent_pid
                    )
                    break
                reachable, self._reachable = self._reachable, None
                if reachable is not None:
                    self._reach(reachable)
                self.tick()
        finally:
            self.close()

    def make_reachable(self, reachable: bool) -> None:
        """Ask the loop to close the metrics endpoint (the operator can no longer scrape this pod, as across a
        network partition: it goes on processing and renewing its lease), or to serve it again on the same
        port. Safe from a signal handler: it only sets what the loop's next tick carries out."""
        self._reachable = reachable

    def _reach(self, reachable: bool) -> None:
        metrics, port = self.client.metrics, self.client.metrics_port
        if port is None:
            return
        if not reachable:
            metrics.close()
        elif not metrics.serving:
            metrics.serve(self.config.client.metrics_host, port)
        self.records.write("reachable" if reachable else "unreachable")

    def close(self) -> None:
        """Stop following the assignment (no callback starts a task after this), then stop every task."""
        self.client.close()
        with self._lock:
            for name, task in self._tasks.items():
                self._release(name, task)
                if task.stateful:
                    self.store.save(task.state)
        self.records.close()

    def _load_state(self) -> None:
        end = self.config.changelog.end_offset(time.time())
        found = self.store.load_all()
        for name, state in found.items():
            if state.offset > end:  # from another changelog: Kafka Streams wipes on OffsetOutOfRange too
                log.warning("pod %s: state of %s is ahead of its changelog: wiped", self.pod, name)
                self.store.wipe(name)
                continue
            self._tasks[name] = _Task(state=state, stateful=True)
        self.records.write("started", tasks={name: task.state.offset for name, task in self._tasks.items()})
        log.info("pod %s started with state for %d tasks", self.pod, len(self._tasks))

    # -- the processing loop ---------------------------------------------------------------------------------

    def tick(self) -> None:
        """Advance every task by the time since the last tick; save state every `STATE_SAVE_SECONDS`."""
        now = time.time()
        elapsed, self._last_tick = now - self._last_tick, now
        end = self.config.changelog.end_offset(now)
        save = now - self._last_save >= STATE_SAVE_SECONDS
        processed = running = 0.0
        with self._lock:
            for name, task in self._tasks.items():
                self._advance(name, task, now, elapsed, end)
                if task.stateful:
                    self.client.metrics.set_task(name, lag=end - task.state.offset, end_offset=end)
                    if save:
                        self.store.save(task.state)
                if task.role is Role.ACTIVE and task.caught_up:
                    self.client.metrics.set_input_lag(name, end - task.state.offset if task.stateful else 0)
                    running += 1
                rate = task.processed / elapsed if elapsed > 0 else 0.0
                self.client.metrics.set_process_rate(name, rate)
                processed += task.processed
                task.processed = 0.0
        if running and elapsed > 0:
            # each active task may process `process_rate` records a second: busy is the share of that used
            self.client.metrics.set_busy_ratio(
                min(processed / (self.config.process_rate * elapsed * running), 1.0)
            )
        if save:
            self._last_save = now

    def _advance(self, name: str, task: _Task, now: float, elapsed: float, end: int) -> None:
        if task.role is Role.ACTIVE and task.caught_up:
            if self.client.may_process():
                self._process(name, task, now, elapsed, end)
            elif task.lease is not None:  # the lease ran out before the fence stopped the task
                self._release(name, task, keep_role=True)
        elif task.role is not None and task.stateful:
            self._restore(name, task, now, elapsed, end)  # standbys and warmups never stop following

    def _restore(self, name: str, task: _Task, now: float, elapsed: float, end: int) -> None:
        task.budget += self.config.restore_rate * elapsed
        to = min(end, task.state.offset + int(task.budget))
        task.budget -= to - task.state.offset
        task.state = task.state.advanced(to)
        if to >= end:
            task.budget = 0.0  # no credit for records that did not exist yet
            if not task.caught_up:
                task.caught_up = True
                self.store.save(task.state)  # a checkpoint: a crash from here on keeps what was restored
                self.records.write(
                    "restored",
                    task=name,
                    role=str(task.role),
                    fromOffset=task.restore_from,
                    toOffset=to,
                    seconds=round(now - task.restore_started, 3),
                )

    def _process(self, name: str, task: _Task, now: float, elapsed: float, end: int) -> None:
        if task.lease is None or task.lease[1] <= now + self.config.tick_seconds:
            task.lease = (now, now + self.config.claim_seconds)
            self.records.write("lease", task=name, start=task.lease[0], end=task.lease[1])
        task.budget += self.config.process_rate * elapsed
        if not task.stateful:
            task.processed += int(task.budget)
            task.budget -= int(task.budget)
            return
        to = min(end, task.state.offset + int(task.budget))
        task.budget = 0.0 if to >= end else task.budget - (to - task.state.offset)
        task.processed += to - task.state.offset
        task.state = task.state.advanced(to)

    def _release(self, name: str, task: _Task, keep_role: bool = False) -> None:
        """Stop processing `name` now (the caller holds the lock the processing needs) and say so; the task
        keeps its role only while the pod's lease is out (it resumes, or is revoked, once held again)."""
        if task.lease is not None:
            self.records.write("release", task=name, start=task.lease[0], end=time.time())
            task.lease = None
        if not keep_role:
            task.role = None
            task.caught_up = False

    # -- the client's callbacks ------------------------------------------------------------------------------

    def _start(self, name: str, role: Role) -> None:
        with self._lock:
            task = self._tasks.get(name)
            if task is None:
                stateful = name.split("_", 1)[0] not in self.config.stateless_subtopologies
                task = self._tasks[name] = _Task(state=TaskState(name), stateful=stateful)
            task.role = role
            task.caught_up = not task.stateful
            task.restore_from = task.state.offset
            task.restore_started = time.time()
            task.budget = 0.0

    def _stop(self, name: str) -> None:
        with self._lock:
            task = self._tasks.get(name)
            if task is None:
                return
            self._release(name, task)
            if task.stateful:
                self.store.save(task.state)
            else:
                del self._tasks[name]  # nothing to keep: no state, no lag to report
                self.client.metrics.forget_task(name)

    def on_assigned(self, task: str) -> None:
        self._start(task, Role.ACTIVE)

    def on_revoked(self, task: str) -> None:
        self._stop(task)

    def on_standby_started(self, task: str) -> None:
        self._start(task, Role.STANDBY)

    def on_standby_stopped(self, task: str) -> None:
        self._stop(task)

    def on_warmup_started(self, task: str) -> None:
        self._start(task, Role.WARMUP)

    def on_warmup_stopped(self, task: str) -> None:
        self._stop(task)

    def on_leaving(self, value: str) -> None:
        self.records.write("leaving", value=value)
