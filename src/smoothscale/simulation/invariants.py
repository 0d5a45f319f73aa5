"""Safety and liveness properties checked against the ground truth at every step of a simulation.

A violation raises `InvariantViolation` at once, with the simulated time, so that a failing scenario points
at the first instant things went wrong rather than at a figure that looks odd at the end.
"""

from __future__ import annotations

import numpy as np

from smoothscale.contract.publication import Publication
from smoothscale.simulation.state import ACTIVE, Cluster, Pod


class InvariantViolation(AssertionError):
    def __init__(self, now: float, message: str) -> None:
        super().__init__(f"t={now:.3f}s: {message}")
        self.now = now


def check_step(cluster: Cluster, now: float) -> None:
    """Never two pods processing one task: at most one running pod has a task active in its applied
    generation (stronger than processing: a second owner that is still restoring counts too)."""
    copies = cluster.copies
    rows = np.flatnonzero(cluster.pod_arrays().up[copies.pod] & (copies.role == ACTIVE))
    owners = np.bincount(copies.task[rows], minlength=len(cluster.tasks.models))
    twice = np.flatnonzero(owners > 1)
    if len(twice):
        task = int(twice[0])
        pods = sorted(cluster.pods[int(p)].name for p in copies.pod[rows][copies.task[rows] == task])
        raise InvariantViolation(now, f"task {cluster.tasks.ids[task]} is active on {', '.join(pods)}")


def check_publication(publication: Publication, now: float) -> None:
    """No generation lists a task active on two pods (the hand-over's promise, checked on what it made)."""
    seen: dict[str, str] = {}
    for pod, held in publication.assignment.items():
        for task in held.active:
            if task in seen:
                raise InvariantViolation(
                    now, f"generation {publication.generation} lists {task} active on {seen[task]} and {pod}"
                )
            seen[task] = pod


def check_retirement(pod: Pod, now: float, timeout_seconds: float | None) -> None:
    """A leaving pod is removed only when it runs no active task any more, or its timeout has expired."""
    if pod.leaving_since is None:
        raise InvariantViolation(now, f"{pod.name} removed without being marked leaving")
    timed_out = timeout_seconds is not None and now >= pod.leaving_since + timeout_seconds
    if pod.applied.active and not timed_out:
        raise InvariantViolation(
            now, f"{pod.name} removed while still running {', '.join(pod.applied.active)} before its timeout"
        )


def check_all_processed(cluster: Cluster, now: float) -> None:
    """Every task is eventually processed: at the end of a run that reached balance, all of them are."""
    idle = np.flatnonzero(~cluster.rates().processing)
    if len(idle):
        names = ", ".join(cluster.tasks.ids[int(t)] for t in idle[:5])
        raise InvariantViolation(now, f"{len(idle)} task(s) not processed at the end, e.g. {names}")
