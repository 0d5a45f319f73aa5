"""The demo's end: a summary table of the steps and a PNG timeline (tasks per pod, warmups, lag over time)."""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from .demo import StepResult
from .observe import Snapshot, pod_order


def summary_table(results: Sequence[StepResult]) -> str:
    """One line per step: how long it took to settle, the generations it went through, the most warmups at
    once, the longest time a task went unprocessed, the tasks that moved between pods with the median and
    the longest time one went unprocessed between its two owners, and the number of broken invariants; for
    Kafka Streams pods also the bridge's fallbacks, whether Kafka's view was the plan and whether the plan
    was balanced at the step's end."""
    kafka = any(result.plan_matches_kafka is not None for result in results)
    header: tuple[str, ...] = (
        "settled in",
        "generations",
        "warmups",
        "worst gap",
        "moved",
        "hand-over p50/max",
        "violations",
    )
    if kafka:
        header += ("fallbacks", "kafka=plan", "balanced")
    lines = [f"{'step':<10} " + " ".join(f"{title:>{max(10, len(title))}}" for title in header)]
    for result in results:
        seconds = "never" if result.seconds is None else f"{result.seconds:.1f} s"
        generations = f"{result.first_generation}-{result.last_generation}"
        gap = f"{result.worst_gap:.1f} s" if result.worst_gap else "-"
        moved = result.handover_gaps
        handover = f"{statistics.median(moved):.2f}/{max(moved):.2f} s" if moved else "-"
        line = (
            f"{result.name:<10} {seconds:>10} {generations:>11} {result.max_warmups:>10} {gap:>10} "
            f"{len(moved):>10} {handover:>17} {len(result.violations):>10}"
        )
        if kafka:
            line += (
                f" {sum(result.fallbacks.values()):>10} {_yes(result.plan_matches_kafka):>10}"
                f" {_yes(result.balanced):>10}"
            )
        lines.append(line)
    lines += [
        f"{result.name}: {result.failovers} rebalance(s) failed a gone pod's actives over to their caught-up"
        " copies (the rest of the plan kept), not counted as fallbacks"
        for result in results
        if result.failovers
    ]
    lines += [
        f"{result.name}: {result.before_first_plan} rebalance(s) led before the operator's first plan "
        "(no_publication: it plans once a pod has reported the topology), not counted as fallbacks"
        for result in results
        if result.before_first_plan
    ]
    return "\n".join(lines)


def _yes(value: bool | None) -> str:
    return "-" if value is None else ("yes" if value else "NO")


def step_figures(result: StepResult) -> dict[str, Any]:
    """One step's figures for `--json`: seconds to settle (None: never), tasks moved and their hand-overs'
    median and longest unprocessed seconds (None: none moved), the bridge's fallbacks (and by reason) and
    fail-overs, whether Kafka's view was the plan and the plan balanced at the step's end, and each migration
    the status showed (epoch seconds: start, end, first ETA; each snapshot's time, percent and ETA: what
    `benchmarks/eta_bench.py --demo` reads)."""
    moved = result.handover_gaps
    return {
        "settled_s": None if result.seconds is None else round(result.seconds, 2),
        "moved": len(moved),
        "handover_p50_s": round(statistics.median(moved), 2) if moved else None,
        "handover_max_s": round(max(moved), 2) if moved else None,
        "fallbacks": sum(result.fallbacks.values()),
        "fallback_reasons": dict(sorted(result.fallbacks.items())),
        "failovers": result.failovers,
        "rebalances_before_first_plan": result.before_first_plan,
        "plan_matches_kafka": result.plan_matches_kafka,
        "balanced": result.balanced,
        "violations": list(result.violations),
        "migrations": [
            {
                "start": round(m.started, 2),
                "end": None if m.ended is None else round(m.ended, 2),
                "records": m.records,
                "first_eta": None if m.first_eta is None else round(m.first_eta, 2),
                "samples": [
                    [round(at, 2), pct, None if eta is None else round(eta, 2)] for at, pct, eta in m.samples
                ],
            }
            for m in result.migrations
        ],
    }


def step_failures(result: StepResult) -> list[str]:
    """What makes a step fail besides its violations: unbalanced at its end, Kafka's view not the plan, a
    fallback of the bridge."""
    failures = []
    if result.balanced is False:
        failures.append("ended unbalanced")
    if result.plan_matches_kafka is False:
        failures.append("Kafka's view of the group is not the plan")
    if result.fallbacks:
        reasons = ", ".join(f"{reason} x{count}" for reason, count in sorted(result.fallbacks.items()))
        failures.append(f"the bridge fell back ({reasons})")
    return failures


def _mark_migrations(axis: Any, results: Sequence[StepResult], start: float) -> None:
    """On the copies panel, each migration's span as the status showed it, with the ETA first predicted for
    it (a dotted line) beside its actual end (where the span ends)."""
    labelled = False
    for result in results:
        for migration in result.migrations:
            if migration.ended is None:
                continue
            axis.axvspan(
                migration.started - start,
                migration.ended - start,
                color="tab:green",
                alpha=0.12,
                label=None if labelled else "migration (status.progress)",
            )
            if migration.first_eta is not None:
                axis.axvline(
                    migration.first_eta - start,
                    color="tab:purple",
                    linestyle=":",
                    linewidth=1.5,
                    label=None if labelled else "ETA first predicted",
                )
            labelled = True


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
    lag.plot(times, [s.total_lag for s in timeline], color="tab:red")
    lag.set_ylabel("lag (offsets)")
    lag.set_xlabel("seconds")
    _mark_migrations(copies, results, start)
    copies.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize="small")
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
