"""Log and journal fixtures with known incidents (the rebalancing guide's examples, seed 003), written by
`smoothscale.pipeline.synthetic`, with the journal written by the operator's own `Journal`.

What was written is returned in `Incidents`, so that tests compare what `analyze` finds with it.
"""

from __future__ import annotations

import gzip
import shutil
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from smoothscale.operator.appref import AppRef
from smoothscale.operator.journal import Journal
from smoothscale.pipeline import synthetic as syn

APP = "otter-app"
T0 = datetime(2026, 11, 21, 11, 0, tzinfo=UTC)
EVERYONE = {0: [1, 2], 1: [1, 2]}
WITHOUT_1_2 = {0: [1, 2], 1: [1]}
PROBE_INTERVAL_S = 600
PROBES = 6
GARBAGE = [
    "java.lang.IllegalStateException: boom",
    "\tat org.apache.kafka.streams.Foo.bar(Foo.java:1)",
    "%%%",
]
MALFORMED_JOURNAL = ['{"ts": "2026-11-21T12:00:00Z", "kind": ', "[1, 2]", "not json at all"]
RESTORE_RATE = 20_000.0
POLL_EXPIRED = "consumer poll timeout has expired."
QUICK_JIT = "-XX:TieredStopAtLevel=1"
"""The JVMs a test starts for one job (the spark-submit run, the cluster's) compile with C1 only: one short
run of large generated code spends much of its CPU in C2's compiler (one `analyze` of the incidents in a new
session: about 30 % less JVM CPU here). The shared session stays with C2: over its many jobs, C1's slower
code costs back what it saves (the same A/B over three analyses in one session: 17 % less, and each later
analysis slower than C2's)."""


def at(minutes: int, seconds: float) -> datetime:
    return T0 + timedelta(minutes=minutes, seconds=seconds)


@dataclass
class Incidents:
    logs: list[Path]
    journal: Path
    cites: dict[str, str] = field(default_factory=dict)  # name -> "file:line"
    times: dict[str, datetime] = field(default_factory=dict)
    balanced_at: datetime | None = None
    scale_out: syn.ScaleOut | None = None
    noise_lines: int = 0


def _rebalance(log: syn.LogWriter, name: str, ts: datetime, leader: tuple[int, int], members: Any) -> int:
    return log.add(f"node{leader[0]}.log", ts, *syn.participating(APP, leader, members))


def write_incidents(folder: Path) -> Incidents:
    log = syn.LogWriter(folder)
    handles: dict[str, int] = {}
    times: dict[str, datetime] = {}

    def rebalance(name: str, ts: datetime, leader: tuple[int, int], members: Any = EVERYONE) -> None:
        handles[name], times[name] = _rebalance(log, name, ts, leader, members), ts

    rebalance("first", at(8, 54.694), (0, 2))
    times["hb"] = at(9, 40)
    handles["hb_broker"] = log.add("broker.log", times["hb"], syn.heartbeat_expired(APP, 0, 2))
    rebalance("leader_1_1", at(9, 45.375), (1, 1))
    rebalance("leader_0_1", at(10, 57.340), (0, 1))
    handles["sync_failed"] = log.add("node0.log", at(10, 57.345), syn.sync_failed(APP, 0, 1, 742))
    rebalance("close_second", at(10, 57.362), (0, 1))
    times["replaced"] = at(12, 0)
    handles["replaced"] = log.add("node0.log", times["replaced"], syn.thread_replaced(APP, 0, 2))
    times["poll"] = at(14, 20)
    handles["poll"] = log.add("node1.log", times["poll"], syn.poll_timeout(APP, 1, 2))
    leave = f"Removing member {syn.member_id(APP, 1, 2)} on LeaveGroup; client reason: {POLL_EXPIRED}"
    times["poll_broker"] = at(14, 20.5)
    handles["poll_broker"] = log.add("broker.log", times["poll_broker"], syn.preparing(APP, 743, leave))
    times["stabilized"] = at(14, 30.7)
    log.add("broker.log", times["stabilized"], syn.stabilized(APP, 744, 3))
    rebalance("churn_gone", at(14, 30.654), (0, 1), WITHOUT_1_2)
    rebalance("churn_came", at(15, 30), (0, 1))
    for probe in range(PROBES):
        ts = at(20 + probe * PROBE_INTERVAL_S // 60, 0)
        rebalance(f"probe_{probe}", ts, (0, 1))
        log.add("node0.log", ts + timedelta(milliseconds=5), syn.probing_scheduled(APP, (0, 1), 0))
    noise = 0
    for second in range(0, 90 * 60, 7):
        for node in (0, 1):
            log.add(f"node{node}.log", T0 + timedelta(seconds=second), syn.noise(APP, node, 1, second))
            noise += 1
    log.add("node1.log", at(30, 0.5), *GARBAGE)
    where = log.write()
    # One log file gzipped: the reader takes both.
    with (folder / "node1.log").open("rb") as plain, gzip.open(folder / "node1.log.gz", "wb") as packed:
        shutil.copyfileobj(plain, packed)
    (folder / "node1.log").unlink()
    cites = {name: where[handle].replace("node1.log", "node1.log.gz") for name, handle in handles.items()}
    journal_path = folder / "journal.jsonl"
    scale_out = syn.ScaleOut(start=at(40, 0), restore_rate=RESTORE_RATE, app=APP)
    balanced = write_journal(journal_path, scale_out)
    return Incidents(
        logs=[folder / "node0.log", folder / "node1.log.gz", folder / "broker.log"],
        journal=journal_path,
        cites=cites,
        times=times,
        balanced_at=balanced,
        scale_out=scale_out,
        noise_lines=noise,
    )


def write_journal(path: Path, scenario: syn.ScaleOut) -> datetime:
    """The scenario's records through the operator's Journal, then a few malformed lines."""
    clock = [scenario.start]
    journal = Journal(stdout=False, path=path, clock=lambda: clock[0])
    app = AppRef("default", scenario.app, "uid-1")

    def record(ts: datetime, kind: str, generation: int, **fields: Any) -> None:
        clock[0] = ts
        journal.record(kind, app, generation, **fields)

    balanced = syn.scale_out_journal(scenario, record)
    journal.close()
    with path.open("a", encoding="utf-8") as out:
        out.writelines(line + "\n" for line in MALFORMED_JOURNAL)
    return balanced
