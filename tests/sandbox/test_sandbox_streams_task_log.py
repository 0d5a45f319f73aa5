"""Tasks' runs from Kafka Streams' own log lines (`streams_task_log`): a suspension ends a run, a process's
exit ends the runs it never suspended (a SIGKILL, or log4j stopped first), so does its freeze, and the runs
judge hand-overs as the sample workers' records do."""

from __future__ import annotations

from datetime import datetime
from pathlib import Path

from smoothscale.sandbox.records import handovers, longest_gaps, overlaps
from smoothscale.sandbox.streams_task_log import task_intervals


def line(clock: str, text: str) -> str:
    return f"[2026-11-28 {clock}] INFO stream-thread [app-0-StreamThread-1] {text} (org.apache.kafka.x)\n"


def at(clock: str) -> float:
    return datetime.strptime(f"2026-11-28 {clock}", "%Y-%m-%d %H:%M:%S,%f").timestamp()


def test_runs_end_at_a_suspension_or_at_their_process_exit(tmp_path: Path) -> None:
    (tmp_path / "default.app-0.1a2b3c4d.log").write_text(
        line("10:00:00,000", "task [1_0] Restored and ready to run")
        + line("10:00:00,100", "task [0_0] Restored and ready to run")
        + line("10:00:05,000", "task [1_0] Suspended from RUNNING")
        + "  a continuation line, no stamp\n"
        + line("10:00:09,000", "task [0_0] Restored and ready to run")  # after the restart
    )
    (tmp_path / "default.app-1.5e6f7a8b.log").write_text(
        line("10:00:05,600", "task [1_0] Restored and ready to run")
        + line("10:00:07,000", "task [1_0] Suspended from RUNNING")
    )
    killed = {"kind": "exited", "pod": "app-0", "pid": 7, "at": at("10:00:06,000"), "code": -9}
    runs = task_intervals(tmp_path, [killed, {"kind": "exited", "pod": "app-9", "at": 0.0}])
    assert [(r.task, r.pod, r.start, r.end) for r in runs[:4]] == [
        ("0_0", "app-0", at("10:00:00,100"), at("10:00:06,000")),
        ("0_0", "app-0", at("10:00:09,000"), runs[1].end),
        ("1_0", "app-0", at("10:00:00,000"), at("10:00:05,000")),
        ("1_0", "app-1", at("10:00:05,600"), at("10:00:07,000")),
    ]
    assert runs[1].end > at("10:00:09,000")  # still running: until now
    moved = handovers(runs, at("10:00:00,000"), at("10:00:10,000"))
    assert [(h.task, h.source_pod, h.target_pod, round(h.gap, 3)) for h in moved] == [
        ("1_0", "app-0", "app-1", 0.6)
    ]
    gaps = longest_gaps(runs, ["0_0"], at("10:00:00,000"), at("10:00:10,000"))
    assert round(gaps["0_0"], 3) == 3.0
    assert overlaps(runs) == []


def test_a_frozen_process_runs_nothing_from_its_freeze_to_its_next_restore(tmp_path: Path) -> None:
    """A SIGSTOPped JVM logs nothing; thawed, it logs the suspension of the tasks it lost meanwhile: without
    its `frozen` record, its runs would seem to go on through the outage, alongside their new owners'."""
    (tmp_path / "default.app-0.1a2b3c4d.log").write_text(
        line("10:00:00,000", "task [0_0] Restored and ready to run")
        + line("10:00:00,100", "task [1_0] Restored and ready to run")
        # frozen at 10:00:02, thawed at 10:00:22: the late suspensions, then 1_0 given back
        + line("10:00:22,400", "task [0_0] Suspended from RUNNING")
        + line("10:00:22,500", "task [1_0] Suspended from RUNNING")
        + line("10:00:30,000", "task [1_0] Restored and ready to run")
    )
    (tmp_path / "default.app-1.5e6f7a8b.log").write_text(
        line("10:00:13,000", "task [0_0] Restored and ready to run")
        + line("10:00:13,200", "task [1_0] Restored and ready to run")
        + line("10:00:29,500", "task [1_0] Suspended from RUNNING")
    )
    frozen = {"kind": "frozen", "pod": "app-0", "pid": 7, "at": at("10:00:02,000")}
    thawed = {"kind": "thawed", "pod": "app-0", "pid": 7, "at": at("10:00:22,000")}
    runs = task_intervals(tmp_path, [frozen, thawed])
    going = at("10:00:31,000")  # a run still going ends now (None below)
    assert [(r.task, r.pod, r.start, r.end if r.end < going else None) for r in runs] == [
        ("0_0", "app-0", at("10:00:00,000"), at("10:00:02,000")),
        ("0_0", "app-1", at("10:00:13,000"), None),
        ("1_0", "app-0", at("10:00:00,100"), at("10:00:02,000")),
        ("1_0", "app-1", at("10:00:13,200"), at("10:00:29,500")),
        ("1_0", "app-0", at("10:00:30,000"), None),  # runs again from its restore
    ]
    assert overlaps(runs) == []
    gaps = longest_gaps(runs, ["0_0", "1_0"], at("10:00:00,000"), going)
    assert {task: round(gap, 3) for task, gap in gaps.items()} == {"0_0": 11.0, "1_0": 11.2}
    moved = handovers(runs, at("10:00:00,000"), going)
    assert [(h.task, h.source_pod, h.target_pod, round(h.gap, 3)) for h in moved] == [
        ("0_0", "app-0", "app-1", 11.0),
        ("1_0", "app-0", "app-1", 11.2),
        ("1_0", "app-1", "app-0", 0.5),
    ]
    assert overlaps(task_intervals(tmp_path, [thawed])) != [], "the late suspensions alone overlap"
