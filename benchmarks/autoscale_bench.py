"""Autoscaler benchmark: `spec.autoscaling` (Act) against a KEDA-like lag-threshold policy and a Flink-like
utilisation policy, all three on the same load traces in one run of the simulator (the operator's own
round, the real planner, smoothscale's warm migrations underneath every policy: only the policy differs).

The app: 24 stateful tasks of 2 M changelog records, pods that process 5,000 records/s and restore 50,000
records/s per copy (100,000 per pod), 2 warmups at once (the planner's default); 4,800 records/s of input
at 1x. The lag target is 60 s (the worst task's backlog over its input rate), the busy target 0.8.

Traces (input rate as a multiple of 1x):
- step-up: 1x for 20 minutes, then 4x for 100 minutes;
- step-down: 4x for 20 minutes (the app starts at its 4x size), then 1x for 100 minutes;
- diurnal: a day, 1x at night to 4x in the afternoon, a new level every 15 minutes;
- spike: 1x, 5x for 10 minutes at minute 30, 1x again for 80 minutes;
- noisy: 1x for 10 minutes, then a plateau at 3x with +-20% of uniform noise every minute for 110 minutes.

Figures per policy and trace: seconds over the lag target, replica-hours, scaling actions, the actions
after each change of level (before the next one), scale-downs within the scale-down stabilisation window
(5 minutes) of a scale-up. Goals (issue 36): at most 3 actions after every change; fewer seconds over the
target than both baselines in total, at no more replica-hours than the better of them; no scale-down
within the window of a scale-up. The last line is one JSON object.

    python benchmarks/autoscale_bench.py
    python benchmarks/autoscale_bench.py --traces step-up,spike
"""

from __future__ import annotations

import argparse
import json
import math
import random
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from smoothscale.control.autoscaler import AutoscalePolicy
from smoothscale.simulation import parse_scenario
from smoothscale.simulation.autoscalers import Autoscaler, LagThreshold, Smoothscale, Utilization
from smoothscale.simulation.engine import Simulation

TASKS = 24
TASK_RATE = 200.0  # records/s per task at 1x
POD_RATE = 5_000.0
LAG_TARGET = 60.0
BUSY = 0.8
DOWN_WINDOW = 300.0
MAX_REPLICAS = 12
SEED = 7


@dataclass(frozen=True)
class Trace:
    name: str
    levels: list[tuple[float, float]]  # (from second, multiple of 1x): the changes of level
    noise: list[tuple[float, float]]  # (at second, multiple): swings within a level, not changes
    duration: float


def _trace(name: str) -> Trace:
    minute = 60.0
    if name == "step-up":
        return Trace(name, [(0, 1.0), (20 * minute, 4.0)], [], 120 * minute)
    if name == "step-down":
        return Trace(name, [(0, 4.0), (20 * minute, 1.0)], [], 120 * minute)
    if name == "diurnal":
        levels = [
            (q * 15 * minute, 2.5 - 1.5 * math.cos(2 * math.pi * (q * 15 - 180) / 1440)) for q in range(96)
        ]
        return Trace(name, levels, [], 24 * 60 * minute)
    if name == "spike":
        return Trace(name, [(0, 1.0), (30 * minute, 5.0), (40 * minute, 1.0)], [], 120 * minute)
    if name == "noisy":
        rng = random.Random(SEED)
        noise = [(10 * minute + k * minute, 3.0 * rng.uniform(0.8, 1.2)) for k in range(1, 110)]
        return Trace(name, [(0, 1.0), (10 * minute, 3.0)], noise, 120 * minute)
    raise SystemExit(f"unknown trace {name!r}; expected one of {', '.join(TRACES)}")


TRACES = ("step-up", "step-down", "diurnal", "spike", "noisy")


def _policy() -> AutoscalePolicy:
    return AutoscalePolicy(
        min_replicas=1,
        max_replicas=MAX_REPLICAS,
        max_lag_seconds=LAG_TARGET,
        busy_ratio=BUSY,
        scale_up_stabilization=0.0,
        scale_down_stabilization=DOWN_WINDOW,
    )


POLICIES: dict[str, Callable[[], Autoscaler]] = {
    "smoothscale": lambda: Smoothscale(_policy()),
    "keda-lag": lambda: LagThreshold(1, MAX_REPLICAS, lag_threshold=POD_RATE * BUSY * 15.0),
    "flink-utilization": lambda: Utilization(1, MAX_REPLICAS),
}


def _start_pods(multiple: float) -> int:
    """The size a well-sized app starts at: the fewest pods at the busy target (tasks spread evenly)."""
    for pods in range(1, TASKS + 1):
        if POD_RATE * TASKS / math.ceil(TASKS / pods) * BUSY >= TASK_RATE * TASKS * multiple:
            return pods
    return TASKS


def _scenario(trace: Trace) -> Any:
    events: list[dict[str, Any]] = []
    level = trace.levels[0][1]
    changes = sorted([*trace.levels[1:], *trace.noise])
    for at, multiple in changes:
        events.append({"type": "inputRate", "at": at, "factor": multiple / level})
        level = multiple
    return parse_scenario(
        {
            "name": f"autoscale-{trace.name}",
            "app": "auto",
            "zones": ["zone-a", "zone-b", "zone-c"],
            "pods": {
                "count": _start_pods(trace.levels[0][1]),
                "processRecordsPerSecond": POD_RATE,
                "restoreRecordsPerSecondPerCopy": 50_000,
                "restoreRecordsPerSecondPerPod": 100_000,
            },
            "topology": {
                "subtopologies": [
                    {
                        "partitions": TASKS,
                        "changelogRecords": 2_000_000,
                        "inputRecordsPerSecond": TASK_RATE * trace.levels[0][1],
                    }
                ]
            },
            "events": events,
            "durationSeconds": trace.duration,
        }
    )


def run(trace: Trace, policy: str) -> dict[str, Any]:
    simulation = Simulation(_scenario(trace), "smoothscale", SEED, check_invariants=False)
    autoscaling = simulation.attach_autoscaler(POLICIES[policy](), lag_target=LAG_TARGET)
    simulation.run()
    changes = [at for at, _ in trace.levels[1:]]
    bounds = [*changes, math.inf]
    steps = [
        sum(1 for a in autoscaling.actions if start <= a.at < end)
        for start, end in zip(changes, bounds[1:], strict=True)
    ]
    early_downs = sum(
        1
        for down in autoscaling.actions
        if down.to < down.before
        and any(0 <= down.at - up.at < DOWN_WINDOW for up in autoscaling.actions if up.to > up.before)
    )
    return {
        "over_target_s": round(autoscaling.over_target_seconds, 1),
        "replica_hours": round(autoscaling.replica_seconds / 3600, 3),
        "actions": len(autoscaling.actions),
        "max_steps_after_change": max(steps, default=0),
        "early_scale_downs": early_downs,
        "sizes": [a.to for a in autoscaling.actions][:40],
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--traces", default=",".join(TRACES), help="comma-separated, of: " + ", ".join(TRACES)
    )
    args = parser.parse_args()
    traces = [_trace(name) for name in args.traces.split(",")]
    figures: dict[str, dict[str, dict[str, Any]]] = {}
    started = time.perf_counter()
    for trace in traces:
        figures[trace.name] = {}
        for policy in POLICIES:
            figures[trace.name][policy] = run(trace, policy)
            f = figures[trace.name][policy]
            print(
                f"{trace.name:10} {policy:18} over target {f['over_target_s']:8.1f} s  "
                f"replica-hours {f['replica_hours']:7.2f}  actions {f['actions']:3}  "
                f"max steps/change {f['max_steps_after_change']}  early downs {f['early_scale_downs']}  "
                f"sizes {f['sizes'][:12]}",
                flush=True,
            )
    totals = {
        policy: {
            "over_target_s": round(sum(figures[t][policy]["over_target_s"] for t in figures), 1),
            "replica_hours": round(sum(figures[t][policy]["replica_hours"] for t in figures), 3),
            "actions": sum(figures[t][policy]["actions"] for t in figures),
        }
        for policy in POLICIES
    }
    ours, keda, flink = (totals[p] for p in POLICIES)
    goals = {
        "converges_within_3_steps": all(
            figures[t]["smoothscale"]["max_steps_after_change"] <= 3 for t in figures
        ),
        "fewer_seconds_over_target_than_both": ours["over_target_s"]
        < min(keda["over_target_s"], flink["over_target_s"]),
        "replica_hours_at_most_better_baseline": ours["replica_hours"]
        <= min(keda["replica_hours"], flink["replica_hours"]),
        "no_scale_down_within_window_of_scale_up": all(
            figures[t]["smoothscale"]["early_scale_downs"] == 0 for t in figures
        ),
    }
    for policy, total in totals.items():
        print(
            f"total {policy:18} over target {total['over_target_s']:8.1f} s  replica-hours "
            f"{total['replica_hours']:7.2f}  actions {total['actions']}"
        )
    print("goals:", goals)
    result = {
        "traces": {
            t: {p: {k: v for k, v in f.items() if k != "sizes"} for p, f in by.items()}
            for t, by in figures.items()
        },
        "totals": totals,
        "over_target_ratio_to_keda": round(ours["over_target_s"] / keda["over_target_s"], 3)
        if keda["over_target_s"]
        else None,
        "over_target_ratio_to_flink": round(ours["over_target_s"] / flink["over_target_s"], 3)
        if flink["over_target_s"]
        else None,
        "replica_hours_ratio_to_better_baseline": round(
            ours["replica_hours"] / min(keda["replica_hours"], flink["replica_hours"]), 3
        ),
        "goals": goals,
        "wall_s": round(time.perf_counter() - started, 1),
    }
    print(json.dumps(result))


if __name__ == "__main__":
    main()
