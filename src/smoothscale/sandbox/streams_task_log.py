"""When each task ran on each Kafka Streams pod, from Kafka Streams' own log lines (millisecond stamps): from
`task [..] Restored and ready to run` to `task [..] Suspended from RUNNING` on the same pod, or to the exit of
its process (the kubelet stand-in's `exited` records: a SIGKILLed process logs nothing, and log4j may stop
logging before a closing one suspends its tasks).

The intervals are the sandbox's usual `records.Interval`s, so that hand-overs, gaps and overlaps are judged
as for the sample workers' own records (`records.handovers`, `records.longest_gaps`, `records.overlaps`),
to the millisecond rather than to a snapshot of Kafka's view of the group (`observe.processing_intervals`,
whose resolution is the time between two snapshots, and which sees no task at all while the group
rebalances: a classic group's description has no assignments until it is stable again).
"""

from __future__ import annotations

import re
import time
from collections.abc import Iterable, Mapping
from datetime import datetime
from pathlib import Path
from typing import Any

from .kubelet import log_pod
from .records import Interval

_STAMP = re.compile(r"^\[(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3})\] ")
_TASK_EVENT = re.compile(r"task \[(\d+_\d+)\] (Suspended from RUNNING|Restored and ready to run)")


def task_intervals(logs: Path, records: Iterable[Mapping[str, Any]]) -> list[Interval]:
    """Every run of a task on a pod, from the pods' logs under `logs` (the kubelet stand-in's
    `<namespace>.<pod>.<uid>.log`, one per pod, each restart of its process appended) and the `exited`
    records among `records`; a run still going ends now. Sorted as `records.processing_intervals`' are."""
    exits: dict[str, list[float]] = {}
    for record in records:
        if record.get("kind") == "exited":
            exits.setdefault(str(record["pod"]), []).append(float(record["at"]))
    found: list[Interval] = []
    for log in sorted(logs.glob("*.log")):
        pod = log_pod(log)
        found += _runs(log, pod, sorted(exits.get(pod, [])))
    return sorted(found)


def _runs(log: Path, pod: str, exits: list[float]) -> list[Interval]:
    running: dict[str, float] = {}
    found: list[Interval] = []

    def end_before(at: float) -> None:
        """Close the runs whose process exited before `at`."""
        for task, start in list(running.items()):
            ended = next((exit for exit in exits if start <= exit <= at), None)
            if ended is not None:
                found.append(Interval(task, start, ended, pod, 0))
                del running[task]

    for line in log.read_text(errors="replace").splitlines():
        stamp, event = _STAMP.match(line), _TASK_EVENT.search(line)
        if stamp is None or event is None:
            continue
        at = datetime.strptime(stamp.group(1), "%Y-%m-%d %H:%M:%S,%f").timestamp()  # the JVM's local time
        end_before(at)
        task, kind = event.groups()
        if kind.startswith("Restored"):
            running.setdefault(task, at)
        elif task in running:
            found.append(Interval(task, running.pop(task), at, pod, 0))
    now = time.time()
    end_before(now)
    found += [Interval(task, start, now, pod, 0) for task, start in running.items()]
    return found
