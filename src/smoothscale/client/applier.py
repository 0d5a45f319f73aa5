"""Applying published generations to one pod, in order, through the app's callbacks.

The contract with the operator (Contract 3, docs/architecture.md): a pod stops processing a task as soon as a
generation revokes it, and only then reports that generation. The applier therefore calls `on_revoked` first
and acknowledges (calls `on_applied`, which sets `smoothscale_assignment_generation`) only once every callback
of the generation has returned. A callback that raises leaves the generation unacknowledged; offering the same
publication again resumes from the changes that did complete. A generation older than the applied one is
refused with a log line: it can only come from a stale cache or a tampered ConfigMap, and following it could
start a task that a newer generation gave to another pod.

A pod whose lease runs out unrenewed is fenced (`fence`): its actives stop, nothing is applied while it is,
and it resumes (`unfence`) only once it holds its lease again, from the newest generation offered, or from a
given one when the operator took its lease meanwhile (that generation failed its actives over:
`lease.py`).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from dataclasses import dataclass

from smoothscale.contract.publication import ClientAssignment, Publication

from .roles import Role, RoleChange, role_changes, roles_of

log = logging.getLogger(__name__)


class TaskListener:
    """The app's side of an assignment change. Override what the app needs; every default does nothing.

    Callbacks run one at a time, on the thread that watches the assignment, in the order of `roles.py`.
    """

    def on_revoked(self, task: str) -> None:
        """Stop processing `task`, and return only once it is no longer processed (the state may stay)."""

    def on_assigned(self, task: str) -> None:
        """Start processing `task` (restoring whatever state it lacks first)."""

    def on_standby_started(self, task: str) -> None:
        """Start keeping a replica of `task`'s state up to date."""

    def on_standby_stopped(self, task: str) -> None:
        """Stop updating `task`'s standby replica."""

    def on_warmup_started(self, task: str) -> None:
        """Start restoring `task`'s state so that it can move here (a warmup, KIP-441)."""

    def on_warmup_stopped(self, task: str) -> None:
        """Stop restoring `task`'s warmup replica."""

    def on_leaving(self, value: str) -> None:
        """This pod was marked leaving (annotation value `value`): its tasks are about to move away."""


def _dispatch(listener: TaskListener, change: RoleChange) -> None:
    callbacks: dict[tuple[Role, bool], Callable[[str], None]] = {
        (Role.ACTIVE, True): listener.on_assigned,
        (Role.ACTIVE, False): listener.on_revoked,
        (Role.STANDBY, True): listener.on_standby_started,
        (Role.STANDBY, False): listener.on_standby_stopped,
        (Role.WARMUP, True): listener.on_warmup_started,
        (Role.WARMUP, False): listener.on_warmup_stopped,
    }
    callbacks[change.role, change.started](change.task)


@dataclass
class _Fence:
    """The pod holds no lease: its actives are stopped and nothing is applied until it resumes."""

    resume_from: int | None = None
    """None while the lease is not held; then the first generation the pod may resume from."""


class AssignmentApplier:
    """The generation a pod has applied and the roles it holds; `offer()` moves it to a newer publication.

    `fenced=True` starts it fenced: a pod with a lease applies nothing before it first holds it."""

    def __init__(
        self,
        pod: str,
        listener: TaskListener,
        on_applied: Callable[[int], None] | None = None,
        fenced: bool = False,
    ) -> None:
        self.pod = pod
        self._listener = listener
        self._on_applied = on_applied
        self._generation = 0
        self._roles: dict[str, Role] = {}
        self._refused: int | None = None
        self._latest: Publication | None = None
        """The newest publication offered (applied, or waiting for the fence to end)."""
        self._fence: _Fence | None = _Fence() if fenced else None
        self._lock = threading.Lock()

    @property
    def generation(self) -> int:
        """The last generation fully applied (0 before the first)."""
        return self._generation

    def roles(self) -> dict[str, Role]:
        """The tasks this pod holds now, with their roles."""
        with self._lock:
            return dict(self._roles)

    @property
    def fenced(self) -> bool:
        """The pod's actives are stopped until it holds its lease again (and has the generation it needs)."""
        return self._fence is not None

    def offer(self, publication: Publication) -> bool:
        """Apply `publication` if it is newer than the applied one; True when it was applied now."""
        with self._lock:
            generation = publication.generation
            if self._latest is None or generation > self._latest.generation:
                self._latest = publication
            if self._fence is not None and generation >= self._generation:
                return self._resume()
            if generation == self._generation:
                return False
            if generation < self._generation:
                if self._refused != generation:  # a resync sees it again and again: say it once
                    log.warning(
                        "pod %s ignores assignment generation %d: older than the applied generation %d; "
                        "current work continues",
                        self.pod,
                        generation,
                        self._generation,
                    )
                    self._refused = generation
                return False
            self._apply(publication)
        return True

    def fence(self) -> None:
        """The lease is running out: stop every active task (each `on_revoked` returns once it has stopped)
        and apply nothing until `unfence`. Standbys and warmups go on: they write nothing downstream."""
        with self._lock:
            if self._fence is None:
                self._fence = _Fence()
            stopped = [task for task, role in self._roles.items() if role is Role.ACTIVE]
            for task in stopped:
                self._listener.on_revoked(task)
                del self._roles[task]
        log.warning(
            "pod %s fenced: %d active tasks stopped until it holds its lease again", self.pod, len(stopped)
        )

    def unfence(self, from_generation: int | None) -> bool:
        """The lease is held again: resume from the newest generation offered, once it is `from_generation`
        or later (None: any; the generation applied before the fence will do). True when it resumed now."""
        with self._lock:
            if self._fence is None:
                return False
            self._fence.resume_from = self._generation if from_generation is None else from_generation
            return self._resume()

    def _resume(self) -> bool:
        """End the fence by applying the newest publication, if the lease is held and it is recent enough
        (called under the lock)."""
        fence, latest = self._fence, self._latest
        if fence is None or fence.resume_from is None:
            return False
        if latest is None:  # nothing published yet: nothing to resume, nothing a take can have moved
            self._fence = None
            return True
        if latest.generation < fence.resume_from:
            return False
        self._fence = None
        try:
            self._apply(latest)
        except BaseException:
            self._fence = fence  # not resumed: offering it again retries
            raise
        log.info("pod %s resumed at generation %d", self.pod, latest.generation)
        return True

    def _apply(self, publication: Publication) -> None:
        """Move the roles to `publication`'s, then acknowledge it (called under the lock)."""
        wanted = roles_of(publication.assignment.get(self.pod, ClientAssignment()))
        changes = role_changes(self._roles, wanted)
        for change in changes:
            _dispatch(self._listener, change)  # raises: this generation stays unacknowledged
            if change.started:
                self._roles[change.task] = change.role
            else:
                del self._roles[change.task]
        self._generation = publication.generation
        self._refused = None
        if self._on_applied is not None:  # under the lock: acknowledgements never go backwards
            self._on_applied(publication.generation)
        log.info(
            "pod %s applied assignment generation %d (%s)",
            self.pod,
            publication.generation,
            _summary(changes),
        )


def _summary(changes: list[RoleChange]) -> str:
    """`+2 active, -1 standby`: counts, so that a log line stays short however many tasks move."""
    counts: dict[tuple[str, str], int] = {}
    for change in changes:
        key = ("+" if change.started else "-", change.role.value)
        counts[key] = counts.get(key, 0) + 1
    return ", ".join(f"{sign}{count} {role}" for (sign, role), count in counts.items()) or "no change"
