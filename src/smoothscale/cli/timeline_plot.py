"""The PNG timeline of one simulation: active and warmup tasks per pod, and the total lag, over time.

Three stacked panels share the time axis (minutes), with the scenario's events marked on each, so that a
reader sees at once where work moved, where state was being restored, and whether input piled up.
"""

from __future__ import annotations

import math
from pathlib import Path

import matplotlib

matplotlib.use("Agg")  # files only: never needs a display

import matplotlib.pyplot as plt

from smoothscale.contract.ordering import natural_sorted
from smoothscale.simulation import SimulationResult

MAX_LEGEND_PODS = 12
"""Beyond this many pods a legend hides the lines it names; the colours alone still separate them."""


def _per_pod(result: SimulationResult, field: str) -> dict[str, list[float]]:
    """One series per pod over all samples; NaN while the pod is not running (no line drawn)."""
    samples = result.timeline
    pods = natural_sorted({pod for s in samples for pod in getattr(s, field)})
    return {pod: [float(getattr(s, field).get(pod, math.nan)) for s in samples] for pod in pods}


def plot_timeline(result: SimulationResult, path: Path) -> None:
    minutes = [s.t / 60 for s in result.timeline]
    figure, (actives, warmups, lag) = plt.subplots(
        3, 1, sharex=True, figsize=(11, 9), constrained_layout=True
    )
    figure.suptitle(f"{result.scenario}: {result.strategy} (seed {result.seed})")
    for axis, field, label in ((actives, "actives", "active tasks"), (warmups, "warmups", "warmup tasks")):
        series = _per_pod(result, field)
        for pod, values in series.items():
            axis.step(minutes, values, where="post", label=pod, linewidth=1)
        axis.set_ylabel(f"{label} per pod")
        if 0 < len(series) <= MAX_LEGEND_PODS:
            axis.legend(loc="upper right", fontsize="x-small", ncols=2)
    lag.plot(minutes, [s.input_lag for s in result.timeline], label="input lag (records to process)")
    lag.plot(minutes, [s.restore_lag for s in result.timeline], label="restore lag (records to restore)")
    lag.set_ylabel("total lag (records)")
    lag.set_xlabel("time (minutes)")
    lag.legend(loc="upper right", fontsize="x-small")
    for event in result.events:
        for axis in (actives, warmups, lag):
            axis.axvline(event.at / 60, color="grey", linestyle=":", linewidth=1)
        actives.annotate(
            event.type,
            (event.at / 60, 1),
            xycoords=("data", "axes fraction"),
            fontsize="x-small",
            rotation=90,
        )
    figure.savefig(path, dpi=100)
    plt.close(figure)
