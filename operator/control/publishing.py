"""What to publish next: the next generation toward the plan, or a barrier after a lost ConfigMap, or nothing.

The two-phase hand-over itself (`smoothscale.assignor.handover.next_publication`) is the assignor's; this
module adds what the operator knows that the assignor does not: that a ConfigMap can be lost (and pods may
still run what it said), and that a plan can name a pod that has gone since.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping

from smoothscale.assignor.handover import Publication, next_publication
from smoothscale.assignor.models import ClientAssignment


def barrier_after_loss(
    published: Publication, status_generation: int, acked: Mapping[str, int]
) -> int | None:
    """The generation of an empty "barrier" publication to write first, when the ConfigMap was lost: None
    unless nothing is published while the app's status or a pod shows that something was.

    Pods ignore generations older than the one they run, and report the newest they applied: starting again
    at generation 1 would let a pod running generation 7 look as if it had stopped tasks it never heard of.
    So the operator continues above every generation seen, with an assignment that starts nothing.
    """
    if published.generation > 0:
        return None
    seen = max([status_generation, *acked.values()], default=0)
    return seen + 1 if seen > 0 else None


def barrier_pending(published: Publication, acked: Mapping[str, int], alive: Collection[str]) -> bool:
    """A published generation that assigns no active task is a barrier: no task may start anywhere until
    every live pod has applied it (after a lost ConfigMap, a pod may still run anything)."""
    if published.generation == 0 or any(roles.active for roles in published.assignment.values()):
        return False
    return any(acked.get(pod, -1) < published.generation for pod in alive)


def desired_reachable(desired: Mapping[str, ClientAssignment], alive: Collection[str]) -> bool:
    """A plan may only be published while every pod it gives tasks to still exists."""
    alive = set(alive)
    return all(
        pod in alive for pod, roles in desired.items() if roles.active or roles.standby or roles.warmup
    )


def next_generation(
    published: Publication,
    desired: Mapping[str, ClientAssignment] | None,
    acked: Mapping[str, int],
    alive: Collection[str],
    status_generation: int,
) -> Publication | None:
    """The publication to write this round, or None to write nothing.

    `desired`: the last plan's assignment (None while nothing is planned); `acked`: the generation each pod
    reports as applied; `alive`: pods that may still be processing; `status_generation`: the generation the
    app's status last reported as published (a lost ConfigMap is rebuilt above it).
    """
    barrier = barrier_after_loss(published, status_generation, acked)
    if barrier is not None:
        return Publication(generation=barrier)
    if barrier_pending(published, acked, alive):
        return None  # some pod may still run what a lost generation gave it
    if desired is None or not desired_reachable(desired, alive):
        return None  # nothing planned yet, or the plan names a pod that is gone: wait for the next plan
    return next_publication(published, desired, acked, set(alive))
