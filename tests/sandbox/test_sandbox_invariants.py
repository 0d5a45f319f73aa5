"""The invariants the demo and the end-to-end tests judge by, on hand-made records and assignments."""

from __future__ import annotations

from typing import Any

from sandbox_testkit import publication

from smoothscale.sandbox import invariants
from smoothscale.sandbox.demo import StepResult
from smoothscale.sandbox.report import summary_table

ZONES = {"orders-0": "zone-a", "orders-1": "zone-b", "orders-2": "zone-c", "orders-3": "zone-a"}


def _record(kind: str, pod: str, pid: int, at: float, **fields: Any) -> dict[str, Any]:
    return {"kind": kind, "pod": pod, "pid": pid, "at": at, **fields}


def test_balance_is_judged_per_pod_and_per_zone() -> None:
    three_zones = {pod: zone for pod, zone in ZONES.items() if pod != "orders-3"}
    even = publication(
        3,
        **{
            "orders-0": {"active": ["0_0", "0_1"]},
            "orders-1": {"active": ["0_2"]},
            "orders-2": {"active": ["0_3"]},
        },
    )
    assert invariants.imbalance(even, three_zones) == []
    skewed = publication(
        4, **{"orders-0": {"active": ["0_0", "0_1", "0_2"]}, "orders-1": {"active": ["0_3"]}}
    )
    assert invariants.imbalance(skewed, three_zones) == [
        "active tasks per pod are unbalanced: {'orders-0': 3, 'orders-1': 1, 'orders-2': 0}"
    ]
    two_zones = {"orders-0": "zone-a", "orders-1": "zone-a", "orders-2": "zone-b"}
    assert invariants.imbalance(even, two_zones) == []
    two_zones = {"orders-0": "zone-a", "orders-1": "zone-a", "orders-2": "zone-a", "orders-3": "zone-b"}
    even = publication(5, **{pod: {"active": [f"0_{n}"]} for n, pod in enumerate(two_zones)})
    assert invariants.imbalance(even, two_zones) == [
        "pods per zone are unbalanced: {'zone-a': 3, 'zone-b': 1}"
    ]
    assert invariants.imbalance(even, two_zones, zones=False) == [], "after a zone outage: pods only"
    assert invariants.imbalance(None, ZONES) == ["nothing is published"]


def test_every_task_runs_exactly_once() -> None:
    final = publication(7, **{"orders-0": {"active": ["0_0", "0_1"]}, "orders-1": {"active": ["0_1"]}})
    assert invariants.every_task_once(final, ["0_0", "0_1", "0_2"]) == [
        "task 0_1 is active on 2 pods",
        "task 0_2 is active on 0 pods",
    ]


def test_a_task_moves_only_onto_a_copy_that_caught_up() -> None:
    published = {
        1: publication(1, p0={"active": ["0_0", "0_1", "0_2"]}, p1={"warmup": ["0_0"], "standby": ["0_1"]}),
        2: publication(2, p0={"active": ["0_2"]}, p1={"active": ["0_0", "0_1"]}, p2={"warmup": ["0_2"]}),
        3: publication(3, p0={}, p1={"active": ["0_0", "0_1"]}, p2={"active": ["0_2"]}),
    }
    caught_up = [invariants.WarmupLag(1, "0_0", "p1", None), invariants.WarmupLag(1, "0_0", "p1", 3)]
    restoring = [
        *caught_up,
        invariants.WarmupLag(2, "0_2", "p2", 40),
        invariants.WarmupLag(3, "0_2", "p2", 0),
    ]
    assert invariants.cold_moves({g: published[g] for g in (1, 2)}, caught_up, 5) == ([], 1)
    assert invariants.cold_moves(published, restoring, 5) == (
        ["task 0_2 moved from p0 to p2 in generation 3 before its warmup caught up (last lag 40 > 5)"],
        2,
    )
    assert invariants.cold_moves({1: published[1], 3: published[3]}, caught_up, 5)[0] == [
        "task 0_2 moved from p0 to p2 in generation 3, which held no copy of it in generation 1"
    ]


def test_a_restart_must_restore_from_the_surviving_volume() -> None:
    survived = [
        _record("started", "orders-0", 7, 10.0, tasks={"1_0": 900}),
        _record("restored", "orders-0", 7, 11.0, task="1_0", role="active", fromOffset=900, toOffset=950),
    ]
    assert invariants.rebuilt_state(survived, "orders-0", since=9.0) == []
    rebuilt = [
        *survived[:1],
        _record("restored", "orders-0", 7, 11.0, task="1_0", fromOffset=0, toOffset=950),
    ]
    assert invariants.rebuilt_state(rebuilt, "orders-0", 9.0) == [
        "orders-0 rebuilt 1_0 from offset 0 although its volume held offset 900"
    ]
    lost = [_record("started", "orders-0", 8, 10.0, tasks={})]
    assert invariants.rebuilt_state(lost, "orders-0", 9.0) == [
        "orders-0 restarted with an empty volume: its state was lost"
    ]
    assert invariants.rebuilt_state(lost, "orders-0", 11.0) == ["orders-0 did not restart after 11.000"]


def test_no_process_rebuilds_what_its_volume_held_whatever_its_pod_went_through() -> None:
    records = [
        _record("started", "orders-0", 7, 1.0, tasks={"1_0": 500, "1_1": 0}),
        _record("restored", "orders-0", 7, 2.0, task="1_0", fromOffset=500, toOffset=900),
        _record("restored", "orders-0", 7, 2.0, task="1_1", fromOffset=0, toOffset=900),  # nothing to lose
        _record("restored", "orders-0", 7, 2.0, task="1_2", fromOffset=0, toOffset=900),  # not on the volume
        _record("started", "orders-1", 8, 1.0, tasks={"1_3": 300}),
        _record("restored", "orders-1", 8, 2.0, task="1_3", fromOffset=0, toOffset=900),
    ]
    assert invariants.rebuilt_despite_volume(records) == [
        "orders-1 (pid 8) rebuilt 1_3 from offset 0 although its volume held offset 300"
    ]


def test_gaps_and_overlaps_are_reported_in_words() -> None:
    records = [
        {"kind": "lease", "pod": "a", "pid": 1, "task": "0_0", "start": 0.0, "end": 2.0},
        {"kind": "lease", "pod": "b", "pid": 2, "task": "0_0", "start": 1.5, "end": 3.0},
    ]
    assert invariants.concurrent_processing(records) == [
        "task 0_0 processed by a (pid 1) until 2.000 and by b (pid 2) from 1.500"
    ]
    gaps = invariants.unprocessed_seconds(records, ["0_0", "0_1"], 0.0, 10.0)
    assert gaps == {"0_0": 7.0, "0_1": 10.0}
    assert invariants.gaps_beyond(gaps, 8.0) == ["task 0_1 went 10.0 s unprocessed (bound 8.0 s)"]


def test_the_summary_has_a_line_per_step() -> None:
    steps = [
        StepResult(
            "scale-out", "", started=0.0, settled=12.5, first_generation=3, last_generation=9, max_warmups=2
        ),
        StepResult("pod-crash", "", started=20.0, violations=["x"]),
    ]
    steps[0].handover_gaps = [0.3, 0.2, 1.25]
    lines = summary_table(steps).splitlines()
    assert lines[0].split()[0] == "step" and len(lines) == 3
    assert lines[1].split() == ["scale-out", "12.5", "s", "3-9", "2", "-", "3", "0.30/1.25", "s", "0"]
    assert lines[2].split()[:2] == ["pod-crash", "never"] and lines[2].split()[-1] == "1"


def test_handover_gaps_are_measured_between_two_processes_of_one_task() -> None:
    records = [
        {"kind": "lease", "pod": "a", "pid": 1, "task": "0_0", "start": 1.0, "end": 1.5},
        {"kind": "release", "pod": "a", "pid": 1, "task": "0_0", "start": 1.0, "end": 1.25},
        {"kind": "lease", "pod": "b", "pid": 2, "task": "0_0", "start": 1.5, "end": 2.0},
        {"kind": "lease", "pod": "b", "pid": 2, "task": "0_1", "start": 0.0, "end": 2.0},
    ]
    assert invariants.handover_gaps(records, 0.0, 3.0) == [0.25]
    assert invariants.handover_gaps(records, 1.6, 3.0) == []
