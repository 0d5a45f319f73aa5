"""A worker's state stores: one directory per task under the state directory (the PVC's stand-in).

`<state dir>/<task>/state.json` holds how far the task's changelog has been applied and the digest of what was
applied. It is written atomically (write, then rename), so a worker killed at any moment leaves either the old
or the new file, never a torn one, just as a RocksDB checkpoint survives a crash.
"""

from __future__ import annotations

import json
import logging
import os
import shutil
from dataclasses import dataclass
from pathlib import Path

from . import changelog

log = logging.getLogger(__name__)

STATE_FILE = "state.json"


@dataclass(frozen=True)
class TaskState:
    """`offset` records of the task's changelog applied; `digest` the sum of their values."""

    task: str
    offset: int = 0
    digest: int = 0

    def advanced(self, to: int) -> TaskState:
        """The state after applying the changelog up to (not including) offset `to`."""
        if to <= self.offset:
            return self
        return TaskState(self.task, to, changelog.digest(self.task, self.offset, to, self.digest))

    @property
    def consistent(self) -> bool:
        """The digest is what applying offsets 0 to `offset` gives: nothing was skipped or applied twice."""
        return self.digest == changelog.digest(self.task, 0, self.offset)


class StateStore:
    """The task directories under one state directory."""

    def __init__(self, root: Path) -> None:
        self.root = root
        root.mkdir(parents=True, exist_ok=True)

    def load_all(self) -> dict[str, TaskState]:
        """Every task with a readable, consistent state; anything else is wiped (restored from scratch)."""
        states: dict[str, TaskState] = {}
        for directory in sorted(self.root.iterdir()):
            if not directory.is_dir():
                continue
            state = self._read(directory)
            if state is None:
                log.warning(
                    "state of %s in %s is unreadable or inconsistent: wiped", directory.name, self.root
                )
                self.wipe(directory.name)
            else:
                states[state.task] = state
        return states

    def save(self, state: TaskState) -> None:
        directory = self.root / state.task
        directory.mkdir(exist_ok=True)
        staged = directory / f".{STATE_FILE}.tmp"
        staged.write_text(json.dumps({"task": state.task, "offset": state.offset, "digest": state.digest}))
        os.replace(staged, directory / STATE_FILE)

    def wipe(self, task: str) -> None:
        shutil.rmtree(self.root / task, ignore_errors=True)

    @staticmethod
    def _read(directory: Path) -> TaskState | None:
        try:
            raw = json.loads((directory / STATE_FILE).read_text())
            state = TaskState(str(raw["task"]), int(raw["offset"]), int(raw["digest"]))
        except (OSError, ValueError, KeyError, TypeError):
            return None
        return state if state.task == directory.name and state.offset >= 0 and state.consistent else None
