"""Applying published generations to one pod, in order, through the app's callbacks.

The contract with the operator (Contract 3, docs/architecture.md): a pod stops processing a task as soon as a
generation revokes it, and only then reports that generation. The applier therefore calls `on_revoked` first
and acknowledges (calls `on_applied`, which sets `smoothscale_assignment_generation`) only once every callback
of the generation has returned. A callback that raises leaves the generation unacknowledged; offering the same
publication again resumes from the changes that did complete. A generation older than the applied one is
refused with a log line: it can only come from a stale cache or a tampered ConfigMap, and following it could
start a task that a newer generation gave to another pod.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable

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


class AssignmentApplier:
    """The generation a pod has applied and the roles it holds; `offer()` moves it to a newer publication."""

    def __init__(
        self,
        pod: str,
        listener: TaskListener,
        on_applied: Callable[[int], None] | None = None,
    ) -> None:
        self.pod = pod
        self._listener = listener
        self._on_applied = on_applied
        self._generation = 0
        self._roles: dict[str, Role] = {}
        self._refused: int | None = None
        self._lock = threading.Lock()

    @property
    def generation(self) -> int:
        """The last generation fully applied (0 before the first)."""
        return self._generation

    def roles(self) -> dict[str, Role]:
        """The tasks this pod holds now, with their roles."""
        with self._lock:
            return dict(self._roles)

    def offer(self, publication: Publication) -> bool:
        """Apply `publication` if it is newer than the applied one; True when it was applied now."""
        with self._lock:
            generation = publication.generation
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
            wanted = roles_of(publication.assignment.get(self.pod, ClientAssignment()))
            changes = role_changes(self._roles, wanted)
            for change in changes:
                _dispatch(self._listener, change)  # raises: this generation stays unacknowledged
                if change.started:
                    self._roles[change.task] = change.role
                else:
                    del self._roles[change.task]
            self._generation = generation
            self._refused = None
            if self._on_applied is not None:  # under the lock: acknowledgements never go backwards
                self._on_applied(generation)
        log.info("pod %s applied assignment generation %d (%s)", self.pod, generation, _summary(changes))
        return True


def _summary(changes: list[RoleChange]) -> str:
    """`+2 active, -1 standby`: counts, so that a log line stays short however many tasks move."""
    counts: dict[tuple[str, str], int] = {}
    for change in changes:
        key = ("+" if change.started else "-", change.role.value)
        counts[key] = counts.get(key, 0) + 1
    return ", ".join(f"{sign}{count} {role}" for (sign, role), count in counts.items()) or "no change"
