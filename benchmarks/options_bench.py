"""Planner options benchmark (issue 10): what balanceFactor, catchUpTrigger and balanceBy change, simulated.

Each option is measured against the default run (factor 1, eager, count) of the same scenario, in the same
process, under the `smoothscale` strategy with seed 0:

- `balanceFactor` 1, 2, 3 on the library's `scale-out-by-one` (30 tasks, 4 -> 5 pods): actives moved and
  records restored, and the moves a tolerance saves.
- `catchUpTrigger` eager and batched on the library's 3 -> 6 scale-out: generations published and time to
  balance, with the library's warmup cap of 2 (each new pod warms one task at a time, so the trigger cannot
  matter) and with a cap of 6 (each new pod warms several at once: the case batched is for).
- `balanceBy` count and weight on the library's `heavy-subtopology` (one subtopology ten times heavier per
  record): the peak load of one pod, in weight per unit of capacity.

Prints a comparison table per option; the last line is one JSON object of figures, units in the keys.

    python benchmarks/options_bench.py
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

from smoothscale.cli.simulate_command import comparison_table, load_scenario
from smoothscale.simulation import SimulationResult, parse_scenario, simulate

LIBRARY = Path(__file__).resolve().parents[1] / "examples" / "scenarios"
Figures = dict[str, float | int | None]


def log(message: str) -> None:
    print(message, flush=True)


def run(name: str, label: str, **options: Any) -> SimulationResult:
    """The library scenario `name` with planner `options` (camelCase, validated), labelled for the table."""
    scenario = load_scenario(LIBRARY / f"{name}.yaml")
    data = scenario.model_dump(by_alias=True)
    data["planner"].update(options)
    started = time.perf_counter()
    result = simulate(parse_scenario(data), "smoothscale", seed=0)
    log(f"{name} / {label}: {time.perf_counter() - started:.2f} s wall")
    assert result.balanced, f"{name} / {label} did not balance"
    return result.model_copy(update={"strategy": label})


def ratio(value: float | None, default: float | None) -> float | None:
    return None if value is None or not default else round(value / default, 4)


def balance_factor(figures: Figures) -> None:
    results = {f: run("scale-out-by-one", f"factor {f}", balanceFactor=f) for f in (1, 2, 3)}
    log(comparison_table(list(results.values())))
    default = results[1]
    for factor, result in results.items():
        key = f"scale_out_by_one_factor_{factor}"
        figures[f"{key}_moved_actives_tasks"] = result.moved_actives
        figures[f"{key}_records_restored_records"] = round(result.records_restored)
        figures[f"{key}_time_to_balance_seconds"] = result.time_to_balance_seconds
        if factor > 1:
            figures[f"{key}_moves_saved_tasks"] = default.moved_actives - result.moved_actives
            figures[f"{key}_moved_actives_ratio"] = ratio(result.moved_actives, default.moved_actives)
            figures[f"{key}_records_restored_ratio"] = ratio(
                result.records_restored, default.records_restored
            )


def catch_up_trigger(figures: Figures) -> None:
    for cap in (2, 6):
        results = {
            trigger: run(
                "scale-out-3-to-6", f"{trigger}, {cap} warmups", catchUpTrigger=trigger, maxWarmupReplicas=cap
            )
            for trigger in ("eager", "batched")
        }
        log(comparison_table(list(results.values())))
        default = results["eager"]
        for trigger, result in results.items():
            key = f"scale_out_3_to_6_warmups_{cap}_{trigger}"
            figures[f"{key}_generations"] = result.generations_published
            figures[f"{key}_time_to_balance_seconds"] = result.time_to_balance_seconds
        batched = results["batched"]
        key = f"scale_out_3_to_6_warmups_{cap}_batched"
        figures[f"{key}_generations_ratio"] = ratio(
            batched.generations_published, default.generations_published
        )
        figures[f"{key}_time_to_balance_ratio"] = ratio(
            batched.time_to_balance_seconds, default.time_to_balance_seconds
        )


def balance_by(figures: Figures) -> None:
    results = {by: run("heavy-subtopology", by, balanceBy=by) for by in ("count", "weight")}
    log(comparison_table(list(results.values())))
    for by, result in results.items():
        figures[f"heavy_subtopology_{by}_peak_pod_load_weight_per_capacity"] = round(result.peak_pod_load, 3)
        figures[f"heavy_subtopology_{by}_moved_actives_tasks"] = result.moved_actives
    figures["heavy_subtopology_weight_peak_pod_load_ratio"] = ratio(
        results["weight"].peak_pod_load, results["count"].peak_pod_load
    )


def main() -> None:
    figures: Figures = {}
    balance_factor(figures)
    catch_up_trigger(figures)
    balance_by(figures)
    print(json.dumps(figures, sort_keys=True))


if __name__ == "__main__":
    main()
