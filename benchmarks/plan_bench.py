"""Planner benchmark: wall time and peak memory at three scales, and the target's optimality.

Workload (issue "Planner"): 3 racks, 1 standby, `balance_subtopology`, a random previous assignment, every pod
caught up on a random half of its tasks (`smoothscale.assignor.synthetic`). Each scale runs in a fresh
process so that its peak RSS is its own. Optimality compares the target's cross-rack cost with an exact
CP-SAT solve of the same balanced placement on small instances, and with the `none` strategy on the same
input. The last line is one JSON object of figures.

With `--baseline <git-ref>` it instead compares the planner against the one at that commit, same run, same
instances: the reference commit's `assignor/` is extracted under `.cache/plan-baseline/<sha>/` and imported
in its own worker process (PYTHONPATH puts it ahead of the checkout's), the current planner in another; both
plan each scale's snapshot in alternating order, round after round, and report the median CPU time, so that
machine load hits both sides alike. Per scale the last line gives the before and after CPU seconds and
their ratio (below 1: faster now). `--baseline HEAD` (the same planner on both sides) shows the noise.

    python benchmarks/plan_bench.py                       # everything
    python benchmarks/plan_bench.py --quick               # smaller repeat counts
    python benchmarks/plan_bench.py --baseline 5a4697e^   # same-run A/B against that commit's planner
"""

from __future__ import annotations

import argparse
import json
import math
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from baseline_tree import SideWorker, baseline_tree
from ortools.sat.python import cp_model

from smoothscale.assignor.models import RackStrategy, Snapshot
from smoothscale.assignor.planner import plan
from smoothscale.assignor.synthetic import Shape, random_snapshot, random_snapshot_dict

SCALES = [
    ("1k", 1_000, 50, 0.05),
    ("10k", 10_000, 300, 0.5),
    ("50k", 50_000, 1_000, 3.0),
]


def time_one_scale(tasks: int, clients: int, repeats: int) -> dict[str, float]:
    """Runs in the child process: median planner wall time and the process's peak RSS."""
    snapshot = random_snapshot(Shape(tasks, clients), seed=1)
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        plan(snapshot)
        times.append(time.perf_counter() - start)
    peak_kib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return {"median_seconds": statistics.median(times), "peak_rss_mb": peak_kib / 1024}


def measure_scale(tasks: int, clients: int, repeats: int) -> dict[str, float]:
    out = subprocess.run(
        [sys.executable, __file__, "--one", str(tasks), str(clients), str(repeats)],
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    result: dict[str, float] = json.loads(out.strip().splitlines()[-1])
    return result


def exact_cross_rack_cost(snapshot: Snapshot) -> int:
    """Minimal cross-rack cost of a balanced active placement, by CP-SAT (independent of the planner)."""
    config = snapshot.config
    clients = [c for c in snapshot.clients if c.leaving_since is None]
    total_capacity = sum(c.capacity for c in clients)
    model = cp_model.CpModel()
    x = {(t.id, c.id): model.new_bool_var(f"x_{t.id}_{c.id}") for t in snapshot.tasks for c in clients}
    for t in snapshot.tasks:
        model.add_exactly_one(x[t.id, c.id] for c in clients)

    def bound(tasks: list[str], size: int) -> None:
        for c in clients:
            share = size * c.capacity
            count = sum(x[t, c.id] for t in tasks)
            model.add(count >= share // total_capacity)
            model.add(count <= -(-share // total_capacity))

    for stateful in (True, False):
        group = [t.id for t in snapshot.tasks if t.stateful is stateful]
        bound(group, len(group))
    if config.rack_aware.strategy is RackStrategy.BALANCE_SUBTOPOLOGY:
        for sub in {t.subtopology for t in snapshot.tasks}:
            group = [t.id for t in snapshot.tasks if t.subtopology == sub]
            bound(group, len(group))

    def missing(task_racks: list[list[str]], rack: str) -> int:
        return sum(1 for racks in task_racks if racks and rack not in racks)

    model.minimize(
        sum(
            config.rack_aware.traffic_cost * missing(t.input_partition_racks, c.rack) * x[t.id, c.id]
            for t in snapshot.tasks
            for c in clients
        )
    )
    solver = cp_model.CpSolver()
    solver.parameters.num_workers = 2
    solver.parameters.max_time_in_seconds = 60
    status = solver.solve(model)
    assert status == cp_model.OPTIMAL, solver.status_name(status)
    return round(solver.objective_value)


def optimality(seeds: int) -> dict[str, float]:
    """Target cross-rack cost over the exact optimum (nonOverlapCost 0: pure traffic) on small instances.

    Two input partitions per task, each on one rack: the optimum is rarely zero, so the check has teeth.
    """
    ratios = []
    for strategy in (RackStrategy.MIN_TRAFFIC, RackStrategy.BALANCE_SUBTOPOLOGY):
        for seed in range(seeds):
            shape = Shape(24, 6, subtopologies=3, strategy=strategy, input_partitions=2, replication=1)
            data = random_snapshot_dict(shape, seed)
            data["config"]["rackAware"]["nonOverlapCost"] = 0
            snapshot = Snapshot.model_validate(data)
            achieved = plan(snapshot).stats.target_cross_rack_cost
            optimum = exact_cross_rack_cost(snapshot)
            ratios.append(1.0 if achieved == optimum else (achieved / optimum if optimum else math.inf))
    return {
        "target_over_exact_cross_rack_cost_mean_ratio": statistics.fmean(ratios),
        "target_over_exact_cross_rack_cost_max_ratio": max(ratios),
        "exact_instances": len(ratios),
    }


def against_none() -> dict[str, float]:
    """Cross-rack cost of the rack-aware target over the `none` strategy's, same 10k-task input.

    Two input partitions per task, each on one rack, so that no placement reads everything locally.
    """
    data = random_snapshot_dict(Shape(10_000, 300, input_partitions=2, replication=1), seed=3)
    aware = plan(Snapshot.model_validate(data)).stats.target_cross_rack_cost
    data["config"]["rackAware"]["strategy"] = "none"
    unaware = plan(Snapshot.model_validate(data)).stats.target_cross_rack_cost
    return {
        "target_cross_rack_cost_balance_subtopology": aware,
        "target_cross_rack_cost_none": unaware,
        "balance_subtopology_over_none_cross_rack_cost_ratio": aware / unaware if unaware else 0.0,
    }


def serve_plans(snapshot_path: str) -> None:
    """Worker: load the snapshot, then per line read (a count) plan it that many times, answering with the
    CPU seconds per plan."""
    snapshot = Snapshot.model_validate_json(Path(snapshot_path).read_text())
    print(json.dumps({"planner": sys.modules[plan.__module__].__file__}), flush=True)
    for line in sys.stdin:
        count = int(line)
        start = time.process_time()
        for _ in range(count):
            plan(snapshot)
        print((time.process_time() - start) / count, flush=True)


def compare_scale(
    tasks: int, clients: int, baseline: Path, rounds: int, per_turn: int
) -> tuple[float, float]:
    """Median CPU seconds of one plan, (before, after): one untimed round, then `rounds` rounds in
    alternating order (before first, then after first), each side planning `per_turn` times a turn."""
    with tempfile.TemporaryDirectory() as folder:
        path = os.path.join(folder, "snapshot.json")
        Path(path).write_text(json.dumps(random_snapshot_dict(Shape(tasks, clients), seed=1)))
        before = SideWorker("before", __file__, path, baseline, "assignor", "planner")
        try:
            after = SideWorker("after", __file__, path, None, "assignor", "planner")
            try:
                times: dict[str, list[float]] = {"before": [], "after": []}
                for turn in range(rounds + 1):
                    pair = [("before", before), ("after", after)]
                    for side, worker in pair if turn % 2 else pair[::-1]:
                        seconds = float(worker.ask(str(per_turn)))
                        if turn:
                            times[side].append(seconds)
            finally:
                after.close()
        finally:
            before.close()
    return statistics.median(times["before"]), statistics.median(times["after"])


def compare(ref: str, rounds: int) -> dict[str, Any]:
    sha, baseline = baseline_tree(ref, "assignor", "planner.py")
    figures: dict[str, Any] = {"baseline_commit": sha, "rounds": rounds}
    for name, tasks, clients, budget in SCALES:
        # Small scales plan several times a turn, so that a turn lasts about half a second.
        per_turn = max(1, math.ceil(0.5 / budget))
        before, after = compare_scale(tasks, clients, baseline, rounds, per_turn)
        print(f"{name}: {tasks} tasks x {clients} pods: {before:.4f} s -> {after:.4f} s CPU", flush=True)
        figures[f"plan_{name}_before_cpu_seconds"] = round(before, 4)
        figures[f"plan_{name}_after_cpu_seconds"] = round(after, 4)
        figures[f"plan_{name}_after_over_before_ratio"] = round(after / before, 3)
    return figures


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--one", nargs=3, type=int, metavar=("TASKS", "CLIENTS", "REPEATS"))
    parser.add_argument("--worker", metavar="SNAPSHOT_JSON", help=argparse.SUPPRESS)
    parser.add_argument("--quick", action="store_true")
    parser.add_argument(
        "--baseline", metavar="GIT_REF", help="compare against the planner at this commit (same-run A/B)"
    )
    parser.add_argument("--rounds", type=int, help="A/B rounds per scale (default 9, 3 with --quick)")
    args = parser.parse_args()
    if args.one:
        print(json.dumps(time_one_scale(*args.one)))
        return
    if args.worker:
        serve_plans(args.worker)
        return
    if args.baseline:
        rounds = args.rounds if args.rounds is not None else (3 if args.quick else 9)
        if rounds < 1:
            parser.error("--rounds: expected at least 1")
        print(json.dumps(compare(args.baseline, rounds)))
        return
    figures: dict[str, Any] = {}
    for name, tasks, clients, budget in SCALES:
        repeats = 3 if args.quick else (7 if tasks <= 10_000 else 5)
        result = measure_scale(tasks, clients, repeats)
        figures[f"plan_{name}_seconds"] = round(result["median_seconds"], 4)
        figures[f"plan_{name}_over_budget_ratio"] = round(result["median_seconds"] / budget, 3)
        figures[f"plan_{name}_peak_rss_mb"] = round(result["peak_rss_mb"], 1)
        print(f"{name}: {tasks} tasks x {clients} pods: {result}", flush=True)
    exact = optimality(seeds=5 if args.quick else 15)
    print(f"optimality: {exact}", flush=True)
    figures.update(exact)
    versus = against_none()
    print(f"against none: {versus}", flush=True)
    figures.update(versus)
    print(json.dumps(figures))


if __name__ == "__main__":
    main()
