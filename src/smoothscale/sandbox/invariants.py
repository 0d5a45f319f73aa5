"""What must hold whatever the operator does, judged from the workers' records and the published assignment.

The demo exits non-zero and the end-to-end tests fail on any of these (issue 5):

- no task processed by two processes at once (`records.overlaps`);
- every task processed again within a bound during and after each step (`records.longest_gaps`);
- state restored, not rebuilt, where a pod's volume survived its restart;
- the final assignment balanced across pods and across zones;
- a task moves only onto a pod that held a copy of it, a warmup only once it caught up (`cold_moves`).

Each check returns human-readable violations; an empty list means it holds.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from itertools import pairwise
from typing import Any

from smoothscale.contract.publication import Publication

from .records import handovers, longest_gaps, overlaps, processing_intervals

Record = Mapping[str, Any]


def concurrent_processing(records: Iterable[Record]) -> list[str]:
    return [
        f"task {a.task} processed by {a.pod} (pid {a.pid}) until {a.end:.3f} "
        f"and by {b.pod} (pid {b.pid}) from {b.start:.3f}"
        for a, b in overlaps(processing_intervals(records))
    ]


def unprocessed_seconds(
    records: Iterable[Record], tasks: Sequence[str], start: float, end: float
) -> dict[str, float]:
    """For each task, the longest time within `[start, end]` in which no process processed it."""
    return longest_gaps(processing_intervals(records), tasks, start, end)


def handover_gaps(records: Iterable[Record], start: float, end: float) -> list[float]:
    """For every task whose processing moved to another process within `[start, end]`, the seconds from its
    old owner's last processed moment to its new owner's first (`records.handovers`)."""
    return [handover.gap for handover in handovers(processing_intervals(records), start, end)]


def gaps_beyond(gaps: Mapping[str, float], bound: float) -> list[str]:
    """The tasks of `unprocessed_seconds` that went unprocessed for longer than `bound` seconds."""
    return [
        f"task {task} went {gap:.1f} s unprocessed (bound {bound:.1f} s)"
        for task, gap in gaps.items()
        if gap > bound
    ]


def rebuilt_state(records: Sequence[Record], pod: str, since: float) -> list[str]:
    """The pod restarted after `since` with its volume: its new process must have found its state on disk
    and restored from there, not from offset 0."""
    after = [r for r in records if r.get("pod") == pod and float(r.get("at", 0)) >= since]
    starts = [r for r in after if r["kind"] == "started"]
    if not starts:
        return [f"{pod} did not restart after {since:.3f}"]
    found = starts[0]["tasks"]
    if not found:
        return [f"{pod} restarted with an empty volume: its state was lost"]
    pid = starts[0]["pid"]
    return [
        f"{pod} rebuilt {r['task']} from offset 0 although its volume held offset {found[r['task']]}"
        for r in after
        if r["kind"] == "restored" and r["pid"] == pid and r["task"] in found and r["fromOffset"] == 0
    ]


def rebuilt_despite_volume(records: Sequence[Record]) -> list[str]:
    """`rebuilt_state` for every process at once, whatever happened to its pod: no worker restored a task
    from offset 0 when its volume held state of that task when it started."""
    found = {r["pid"]: (r["pod"], r["tasks"]) for r in records if r.get("kind") == "started"}
    return [
        f"{found[r['pid']][0]} (pid {r['pid']}) rebuilt {r['task']} from offset 0 although its volume held "
        f"offset {found[r['pid']][1][r['task']]}"
        for r in records
        if r.get("kind") == "restored"
        and r.get("fromOffset") == 0
        and r.get("pid") in found
        and r["task"] in found[r["pid"]][1]
        and found[r["pid"]][1][r["task"]] > 0
    ]


def imbalance(
    publication: Publication | None, zone_of: Mapping[str, str], *, zones: bool = True
) -> list[str]:
    """Active tasks per pod differ by at most one, and so do pods per zone: together, every zone runs its
    share of the tasks (`zone_of` maps the app's pods to their zones). `zones=False` judges the pods only:
    after a zone outage, pods stay where the scheduler put them meanwhile (Kubernetes does not deschedule)."""
    if publication is None:
        return ["nothing is published"]
    per_pod = {
        pod: len(publication.assignment[pod].active) if pod in publication.assignment else 0
        for pod in zone_of
    }
    problems: list[str] = []
    if per_pod and max(per_pod.values()) - min(per_pod.values()) > 1:
        problems.append(f"active tasks per pod are unbalanced: {per_pod}")
    per_zone = Counter(zone_of.values())
    if zones and per_zone and max(per_zone.values()) - min(per_zone.values()) > 1:
        problems.append(f"pods per zone are unbalanced: {dict(sorted(per_zone.items()))}")
    return problems


def every_task_once(publication: Publication | None, tasks: Sequence[str]) -> list[str]:
    """Every task is active on exactly one pod in the final assignment."""
    if publication is None:
        return ["nothing is published"]
    owners = Counter(task for roles in publication.assignment.values() for task in roles.active)
    return [f"task {task} is active on {owners[task]} pods" for task in tasks if owners[task] != 1]


@dataclass(frozen=True)
class WarmupLag:
    """A warmup's lag as the operator scraped it while `generation` was published (its journal's `scrape`
    records); None when the pod reported none for the task."""

    generation: int
    task: str
    pod: str
    lag: int | None


def cold_moves(
    publications: Mapping[int, Publication], lags: Sequence[WarmupLag], acceptable_lag: int
) -> tuple[list[str], int]:
    """Every task that became active on a new pod from one published generation to the next: the new pod
    held it as a standby or a warmup in the generation before, and a warmup had caught up (its last scraped
    lag before the move within `acceptable_lag`), so that no task moves onto a copy still restoring. The
    violations, and how many moves onto a warmup were checked (a run without any proves nothing)."""
    problems: list[str] = []
    warmed = 0
    generations = sorted(publications)
    for previous, generation in pairwise(generations):
        before, after = publications[previous], publications[generation]
        owners = before.active_owner()
        for task, pod in sorted(after.active_owner().items()):
            source = owners.get(task)
            if source is None or source == pod:
                continue
            roles = before.assignment.get(pod)
            move = f"task {task} moved from {source} to {pod} in generation {generation}"
            if roles is None or task not in {*roles.standby, *roles.warmup}:
                problems.append(f"{move}, which held no copy of it in generation {previous}")
            elif task in roles.warmup:
                warmed += 1
                seen = [w.lag for w in lags if (w.task, w.pod) == (task, pod) and w.generation < generation]
                last = seen[-1] if seen else None
                if last is None or last > acceptable_lag:
                    problems.append(
                        f"{move} before its warmup caught up (last lag {last} > {acceptable_lag})"
                    )
    return problems, warmed
