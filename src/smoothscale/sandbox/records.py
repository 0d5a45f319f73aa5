"""The record file: what every sample worker did and when, the evidence the end-to-end and chaos tests judge.

One JSON object per line, appended by every worker of a sandbox to one shared file (`O_APPEND` with a single
`write()` per line: lines of different processes never interleave). Every line has `kind`, `pod`, `pid` and
`at` (Unix time); the kinds:

- `lease` {task, start, end}: written *before* the worker processes `task`, promising it processes the task
  only within `[start, end]`. A worker killed at any moment therefore never processed outside its leases.
- `release` {task, start, end}: the lease that began at `start` ended early, at `end` (revoked or stopped).
- `started` {tasks: {task: offset}}: a worker process started and found this state on its volume.
- `restored` {task, role, fromOffset, toOffset, seconds}: a replica caught up with the changelog, having
  restored `toOffset - fromOffset` records (`fromOffset > 0`: the state survived, it was not rebuilt).
- `leaving` {value}: the worker saw its pod marked leaving.
- `exited` {code}: written by the kubelet stand-in once it has seen the process `pid` dead (killed, crashed
  or stopped); nothing of that process can have happened after `at`.

A processing interval is a lease, cut short by its release and by its process's exit, if any. Processes,
not pod names, are the unit: a pod restarted after a crash is a new `pid`, and two processes may never hold
one task at once.
"""

from __future__ import annotations

import bisect
import json
import os
import threading
import time
from collections import defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

Record = Mapping[str, Any]


class RecordWriter:
    """Appends this process's lines to the record file (or nowhere when `path` is None)."""

    def __init__(self, path: Path | None, pod: str) -> None:
        self.pod = pod
        self._fd: int | None = None
        self._lock = threading.Lock()
        if path is not None:
            path.parent.mkdir(parents=True, exist_ok=True)
            self._fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)

    def write(self, kind: str, **fields: Any) -> None:
        if self._fd is None:
            return
        line = {"kind": kind, "pod": self.pod, "pid": os.getpid(), "at": time.time(), **fields}
        with self._lock:
            os.write(self._fd, (json.dumps(line, separators=(",", ":")) + "\n").encode())

    def close(self) -> None:
        with self._lock:
            if self._fd is not None:
                os.close(self._fd)
                self._fd = None


def read_records(path: Path) -> list[dict[str, Any]]:
    """Every complete line of the file, in order (a line cut short by a killed writer is skipped)."""
    records: list[dict[str, Any]] = []
    if not path.exists():
        return records
    for line in path.read_text().splitlines():
        try:
            record = json.loads(line)
        except ValueError:
            continue
        if isinstance(record, dict):
            records.append(record)
    return records


@dataclass(frozen=True, order=True)
class Interval:
    """`pod` (process `pid`) may have processed `task` at any moment within `[start, end]`."""

    task: str
    start: float
    end: float
    pod: str
    pid: int


def processing_intervals(records: Iterable[Record]) -> list[Interval]:
    """The leases in the records, each cut short by its process's exit and by the first release of its task
    on its process from its start on: a release ends the lease it names and any earlier one still running
    (a lease renewed just before the task was revoked: the process stopped the task, whatever it had
    written ahead); sorted by task, then start."""
    ends: dict[tuple[str, int, str, float], float] = {}
    releases: dict[tuple[str, int, str], list[float]] = {}
    exits: dict[tuple[str, int], float] = {}
    for record in records:
        kind = record.get("kind")
        if kind == "exited":
            exits[str(record["pod"]), int(record["pid"])] = float(record["at"])
        elif kind in ("lease", "release"):
            pod, pid, task = str(record["pod"]), int(record["pid"]), str(record["task"])
            key = (pod, pid, task, float(record["start"]))
            end = float(record["end"])
            ends[key] = min(end, ends.get(key, end))
            if kind == "release":
                releases.setdefault((pod, pid, task), []).append(end)
    for released in releases.values():
        released.sort()

    def end_of(pod: str, pid: int, task: str, start: float, end: float) -> float:
        released = releases.get((pod, pid, task), [])
        first = bisect.bisect_left(released, start)
        if first < len(released):
            end = min(end, released[first])
        return max(start, min(end, exits.get((pod, pid), end)))

    return sorted(
        Interval(task, start, end_of(pod, pid, task, start, end), pod, pid)
        for (pod, pid, task, start), end in ends.items()
    )


def overlaps(intervals: Iterable[Interval]) -> list[tuple[Interval, Interval]]:
    """Pairs of intervals in which two different processes may both have processed one task."""
    found: list[tuple[Interval, Interval]] = []
    by_task: dict[str, list[Interval]] = defaultdict(list)
    for interval in intervals:
        by_task[interval.task].append(interval)
    for task_intervals in by_task.values():
        task_intervals.sort()
        latest: dict[tuple[str, int], Interval] = {}  # the longest-reaching interval of each process so far
        for interval in task_intervals:
            me = (interval.pod, interval.pid)
            found.extend(
                (other, interval)
                for process, other in latest.items()
                if process != me and other.end > interval.start
            )
            if me not in latest or latest[me].end < interval.end:
                latest[me] = interval
    return found


def longest_gaps(
    intervals: Iterable[Interval], tasks: Iterable[str], start: float, end: float
) -> dict[str, float]:
    """For each task, the longest time within `[start, end]` in which no process processed it."""
    by_task: dict[str, list[Interval]] = defaultdict(list)
    for interval in intervals:
        by_task[interval.task].append(interval)
    gaps: dict[str, float] = {}
    for task in tasks:
        longest, covered = 0.0, start
        for interval in sorted(by_task.get(task, [])):
            if interval.end <= covered:
                continue
            if interval.start > end:
                break
            longest = max(longest, interval.start - covered)
            covered = interval.end
        gaps[task] = max(longest, end - covered)
    return gaps


@dataclass(frozen=True)
class Handover:
    """`task` went from pod `source_pod` to pod `target_pod`: the old owner last processed it at `stopped`,
    the new one first at `started`."""

    task: str
    source_pod: str
    target_pod: str
    stopped: float
    started: float

    @property
    def gap(self) -> float:
        """Seconds the task went unprocessed between its two owners."""
        return self.started - self.stopped


def handovers(intervals: Iterable[Interval], start: float, end: float) -> list[Handover]:
    """Every move of a task to another pod whose new process started within `[start, end]`; the old owner
    is the process that processed the task last before (the latest end so far). The first process ever to
    process a task took it over from nobody, and a pod's process restarted after a crash took it over from
    itself: neither is a hand-over. Sorted by start."""
    by_task: dict[str, list[Interval]] = defaultdict(list)
    for interval in intervals:
        by_task[interval.task].append(interval)
    found: list[Handover] = []
    for task, task_intervals in by_task.items():
        latest: Interval | None = None
        for interval in sorted(task_intervals):
            moved = latest is not None and latest.pod != interval.pod
            if moved and latest is not None and start <= interval.start <= end:
                found.append(Handover(task, latest.pod, interval.pod, latest.end, interval.start))
            if latest is None or interval.end >= latest.end:
                latest = interval
    return sorted(found, key=lambda h: (h.started, h.task))
