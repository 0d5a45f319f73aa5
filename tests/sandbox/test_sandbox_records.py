"""The simulated changelog, the state directories and the record file's interval logic (pure, no API)."""

from __future__ import annotations

import json
from pathlib import Path

from hypothesis import given
from hypothesis import strategies as st

from smoothscale.sandbox import changelog
from smoothscale.sandbox.records import (
    Handover,
    Interval,
    RecordWriter,
    handovers,
    longest_gaps,
    overlaps,
    processing_intervals,
    read_records,
)
from smoothscale.sandbox.state import StateStore, TaskState


@given(st.integers(0, 500), st.integers(0, 500), st.sampled_from(["0_0", "1_7", "12_3"]))
def test_digest_is_the_sum_of_the_values_whatever_the_pieces(start: int, length: int, task: str) -> None:
    end = start + length
    brute = sum(changelog.value(task, offset) for offset in range(start, end)) % 2**64
    assert changelog.digest(task, start, end) == brute
    halfway = TaskState(task).advanced(start)
    assert halfway.advanced(end) == TaskState(task).advanced(end)
    assert halfway.advanced(end).consistent


def test_changelog_end_grows_at_the_input_rate_from_the_epoch() -> None:
    log = changelog.Changelog(epoch=1000.0, initial_offset=50, input_rate=10.0)
    assert log.end_offset(900.0) == 50
    assert log.end_offset(1002.5) == 75


def test_state_survives_a_reload_and_a_corrupt_or_inconsistent_one_is_wiped(tmp_path: Path) -> None:
    store = StateStore(tmp_path)
    store.save(TaskState("0_0").advanced(1234))
    store.save(TaskState("0_1").advanced(10))
    (tmp_path / "0_1" / "state.json").write_text('{"task": "0_1", "offset": 11, "digest": 0}')
    (tmp_path / "0_2").mkdir()
    (tmp_path / "0_2" / "state.json").write_text("{tor")
    assert StateStore(tmp_path).load_all() == {"0_0": TaskState("0_0").advanced(1234)}
    assert sorted(path.name for path in tmp_path.iterdir()) == ["0_0"]


def _lease(
    pod: str, task: str, start: float, end: float, pid: int = 1, kind: str = "lease"
) -> dict[str, object]:
    return {"kind": kind, "pod": pod, "pid": pid, "task": task, "start": start, "end": end}


def test_a_release_cuts_its_lease_short_and_only_other_processes_overlap() -> None:
    records = [
        _lease("a", "0_0", 10.0, 10.5),
        _lease("a", "0_0", 10.4, 10.9),  # renewed before the previous lease ran out: the same process
        _lease("a", "0_0", 10.4, 10.6, kind="release"),  # revoked at 10.6
        _lease("b", "0_0", 10.7, 11.2),
        _lease("b", "0_1", 10.0, 10.5),
        {"kind": "started", "pod": "c", "pid": 3, "tasks": {}},
    ]
    intervals = processing_intervals(records)
    assert intervals == [
        Interval("0_0", 10.0, 10.5, "a", 1),
        Interval("0_0", 10.4, 10.6, "a", 1),
        Interval("0_0", 10.7, 11.2, "b", 1),
        Interval("0_1", 10.0, 10.5, "b", 1),
    ]
    assert overlaps(intervals) == []
    restarted_too_early = [*records, _lease("a", "0_0", 11.0, 11.5, pid=2)]
    assert overlaps(processing_intervals(restarted_too_early)) == [
        (Interval("0_0", 10.7, 11.2, "b", 1), Interval("0_0", 11.0, 11.5, "a", 2))
    ]
    b_killed = [*restarted_too_early, {"kind": "exited", "pod": "b", "pid": 1, "at": 10.95, "code": -9}]
    assert overlaps(processing_intervals(b_killed)) == []  # a dead process processes nothing


def test_a_release_ends_an_earlier_lease_still_running_too() -> None:
    """Renewed at 10.4 while the lease written at 10.0 ran to 10.5, revoked at 10.43: the process stopped the
    task then, whatever either lease said; its next owner starting at 10.47 does not overlap (a chaos run
    found the false overlap)."""
    records = [
        _lease("a", "0_5", 10.0, 10.5),
        _lease("a", "0_5", 10.4, 10.9),
        _lease("a", "0_5", 10.4, 10.43, kind="release"),
        _lease("b", "0_5", 10.47, 10.97),
        _lease("a", "0_5", 11.0, 11.5),  # started again later: a release before it does not end it
    ]
    intervals = processing_intervals(records)
    assert intervals == [
        Interval("0_5", 10.0, 10.43, "a", 1),
        Interval("0_5", 10.4, 10.43, "a", 1),
        Interval("0_5", 10.47, 10.97, "b", 1),
        Interval("0_5", 11.0, 11.5, "a", 1),
    ]
    assert overlaps(intervals) == []


def test_longest_gaps_measure_how_long_a_task_went_unprocessed() -> None:
    intervals = [
        Interval("0_0", 1.0, 3.0, "a", 1),
        Interval("0_0", 2.0, 4.0, "b", 2),
        Interval("0_0", 7.0, 8.0, "b", 2),
    ]
    assert longest_gaps(intervals, ["0_0", "0_1"], 0.0, 10.0) == {"0_0": 3.0, "0_1": 10.0}
    assert longest_gaps(intervals, ["0_0"], 1.5, 8.0) == {"0_0": 3.0}


def test_a_handover_is_a_change_of_process_and_its_gap_runs_from_the_old_owners_last_moment() -> None:
    intervals = [
        Interval("0_0", 1.0, 1.5, "a", 1),
        Interval("0_0", 1.4, 2.2, "a", 1),  # renewed: the same owner, its processing ends at 2.2
        Interval("0_0", 2.5, 3.0, "b", 2),  # a -> b: 0.3 s without an owner
        Interval("0_0", 3.0, 3.5, "b", 2),
        Interval("0_0", 6.0, 6.5, "b", 3),  # b restarted (another process of the same pod): no move
        Interval("0_0", 7.0, 7.5, "a", 5),  # b -> a: 0.5 s
        Interval("0_1", 0.0, 9.0, "c", 4),  # never moved
        Interval("0_2", 5.0, 5.5, "d", 5),  # first owner: taken over from nobody
    ]
    found = handovers(intervals, 0.0, 10.0)
    assert found == [Handover("0_0", "a", "b", 2.2, 2.5), Handover("0_0", "b", "a", 6.5, 7.0)]
    assert [round(h.gap, 6) for h in found] == [0.3, 0.5]
    assert handovers(intervals, 2.6, 10.0) == found[1:]  # only new owners that started within the window


def test_writers_of_several_processes_append_whole_lines(tmp_path: Path) -> None:
    path = tmp_path / "records" / "run.jsonl"
    writers = [RecordWriter(path, f"pod-{n}") for n in range(3)]
    for round_ in range(50):
        for writer in writers:
            writer.write("lease", task="0_0", start=float(round_), end=round_ + 0.5)
    for writer in writers:
        writer.close()
    with path.open("a") as torn:
        torn.write('{"kind": "lea')  # a writer killed mid-line
    records = read_records(path)
    assert len(records) == 150
    assert {record["pod"] for record in records} == {"pod-0", "pod-1", "pod-2"}
    assert json.loads(path.read_text().splitlines()[0])["kind"] == "lease"
