"""The demo's end: a summary table of the steps and a PNG timeline (tasks per pod, warmups, lag over time)."""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from pathlib import Path

from .demo import StepResult
from .observe import Snapshot, pod_order


def summary_table(results: Sequence[StepResult]) -> str:
    """One line per step: how long it took to settle, the generations it went through, the most warmups at
    once, the longest time a task went unprocessed, the tasks that moved between pods with the median and
    the longest time one went unprocessed between its two owners, and the number of broken invariants."""
    header = ("settled in", "generations", "warmups", "worst gap", "moved", "hand-over p50/max", "violations")
    lines = [f"{'step':<10} " + " ".join(f"{title:>{max(10, len(title))}}" for title in header)]
    for result in results:
        seconds = "never" if result.seconds is None else f"{result.seconds:.1f} s"
        generations = f"{result.first_generation}-{result.last_generation}"
        gap = f"{result.worst_gap:.1f} s" if result.worst_gap else "-"
        moved = result.handover_gaps
        handover = f"{statistics.median(moved):.2f}/{max(moved):.2f} s" if moved else "-"
        lines.append(
            f"{result.name:<10} {seconds:>10} {generations:>11} {result.max_warmups:>10} {gap:>10} "
            f"{len(moved):>10} {handover:>17} {len(result.violations):>10}"
        )
    return "\n".join(lines)


def timeline_png(timeline: Sequence[Snapshot], results: Sequence[StepResult], path: Path) -> Path:
    """Three panels over time: active tasks per pod, warmups and standbys, total lag; steps marked."""
    import matplotlib  # noqa: PLC0415 - heavy, and only the demo's last step needs it

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt  # noqa: PLC0415

    start = timeline[0].at if timeline else 0.0
    times = [snapshot.at - start for snapshot in timeline]
    pods = sorted({pod.name for snapshot in timeline for pod in snapshot.pods}, key=pod_order)
    figure, (actives, copies, lag) = plt.subplots(3, 1, sharex=True, figsize=(11, 8))
    for name in pods:
        counts = [next((p.active for p in s.pods if p.name == name), None) for s in timeline]
        actives.step(times, [float("nan") if c is None else c for c in counts], where="post", label=name)
    actives.set_ylabel("active tasks")
    actives.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize="small")
    copies.step(times, [s.warmups for s in timeline], where="post", label="warmups")
    copies.step(times, [sum(p.standby for p in s.pods) for s in timeline], where="post", label="standbys")
    copies.set_ylabel("replicas")
    copies.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize="small")
    lag.plot(times, [s.total_lag for s in timeline], color="tab:red")
    lag.set_ylabel("lag (offsets)")
    lag.set_xlabel("seconds")
    for result in results:
        for axis in (actives, copies, lag):
            axis.axvline(result.started - start, color="grey", linestyle="--", linewidth=0.8)
        actives.annotate(
            result.name,
            (result.started - start, 1.0),
            xycoords=("data", "axes fraction"),
            fontsize="small",
            rotation=90,
            va="top",
            ha="right",
        )
    figure.suptitle("smoothscale demo: orders")
    figure.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    figure.savefig(path, dpi=100)
    plt.close(figure)
    return path
