"""When each task ran on each Kafka Streams pod, from Kafka Streams' own log lines (millisecond stamps): from
`task [..] Restored and ready to run` to `task [..] Suspended from RUNNING` on the same pod, or to the exit of
its process (the kubelet stand-in's `exited` records: a SIGKILLed process logs nothing, and log4j may stop
logging before a closing one suspends its tasks), or to its freeze (`frozen`: a SIGSTOPped process processes
and logs nothing; thawed, it logs late the suspension of the tasks it lost meanwhile, which would otherwise
seem to have run through the freeze, alongside their new owners'). After a thaw, a task runs there again
from its next `Restored and ready to run`; a `Suspended` line for a run the freeze ended is ignored. A task
the thawed process goes on with and never restores again (a freeze shorter than the group's session: it
kept its tasks) is not seen running after the thaw: a gap, never an overlap. What a thawed process may
still do to a task it lost before it learns of the rebalance does not count: under exactly-once its commit
fails and its transaction is aborted (its offsets name a generation the group has left, or the transaction
it held open was rolled back by the broker meanwhile and its producer fenced).

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
    `<namespace>.<pod>.<uid>.log`, one per pod, each restart of its process appended) and the `exited` and
    `frozen` records among `records`; a run still going ends now. Sorted as `records.processing_intervals`'
    are."""
    stops: dict[str, list[float]] = {}
    for record in records:
        if record.get("kind") in ("exited", "frozen"):
            stops.setdefault(str(record["pod"]), []).append(float(record["at"]))
    found: list[Interval] = []
    for log in sorted(logs.glob("*.log")):
        pod = log_pod(log)
        found += _runs(log, pod, sorted(stops.get(pod, [])))
    return sorted(found)


def _runs(log: Path, pod: str, stops: list[float]) -> list[Interval]:
    """The runs of one pod's log, each ended by its suspension or the first of `stops` (the process's exits
    and freezes) after its start."""
    running: dict[str, float] = {}
    found: list[Interval] = []

    def end_before(at: float) -> None:
        """Close the runs whose process exited or froze before `at`."""
        for task, start in list(running.items()):
            ended = next((stop for stop in stops if start <= stop <= at), None)
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
