"""What to publish next: the next generation toward the plan, or a barrier after a lost ConfigMap, or nothing.

The two-phase hand-over itself (`smoothscale.assignor.handover.next_publication`) is the assignor's; this
module adds what the operator knows that the assignor does not: that a ConfigMap can be lost (and pods may
still run what it said), that a plan can name a pod that has gone since, and which pods follow their
assignment (they report a generation: a running task moves only to one of them).

Between two rounds, a pending hand-over is followed more closely: the operator polls only the pods it waits
on (`awaited_owners`), on the schedule of `handover_poll_delay`, and publishes the generation that starts
their tasks elsewhere as soon as they acknowledge the revocation.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping

from smoothscale.assignor.handover import next_publication
from smoothscale.contract.ordering import natural_sorted
from smoothscale.contract.publication import ClientAssignment, Publication


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
    ready: Collection[str] | None = None,
    *,
    kafka_rebalances: bool = False,
    max_warmups: int | None = None,
) -> Publication | None:
    """The publication to write this round, or None to write nothing.

    `desired`: the last plan's assignment (None while nothing is planned); `acked`: the generation each pod
    reports as applied; `alive`: pods that may still be processing; `status_generation`: the generation the
    app's status last reported as published (a lost ConfigMap is rebuilt above it); `ready`: the pods that
    follow their assignment, the only ones a running task may move to (None: every pod);
    `kafka_rebalances`: the pods run Kafka Streams, whose rebalance hands tasks over (`plan_as_published`);
    `max_warmups`: maxWarmupReplicas, which no generation exceeds, hand-over copies included
    (`next_publication`).
    """
    barrier = barrier_after_loss(published, status_generation, acked)
    if barrier is not None:
        return Publication(generation=barrier)
    if barrier_pending(published, acked, alive):
        return None  # some pod may still run what a lost generation gave it
    if desired is None or not desired_reachable(desired, alive):
        return None  # nothing planned yet, or the plan names a pod that is gone: wait for the next plan
    if kafka_rebalances:
        return plan_as_published(published, desired, alive)
    pods = None if ready is None else set(ready)
    return next_publication(published, desired, acked, set(alive), pods, max_warmups)


def plan_as_published(
    published: Publication, desired: Mapping[str, ClientAssignment], alive: Collection[str]
) -> Publication | None:
    """For Kafka Streams apps: the plan itself, in one generation (None when it is already published).

    Kafka's cooperative protocol revokes a moved task from its old owner in one rebalance and assigns it
    in the follow-up, so a revoking generation of the operator's own would only delay the move.
    """
    pods = natural_sorted(set(desired) | {pod for pod in published.assignment if pod in alive})
    assignment = {pod: desired.get(pod, ClientAssignment()) for pod in pods}
    if (
        not published.revoking
        and assignment == {pod: published.assignment.get(pod, ClientAssignment()) for pod in pods}
        and set(published.assignment) <= set(pods)
    ):
        return None
    return Publication(generation=published.generation + 1, assignment=assignment)


def awaited_owners(published: Publication, acked: Mapping[str, int], alive: Collection[str]) -> set[str]:
    """Live pods that a pending hand-over waits on: they have not yet acknowledged the generation that
    revoked one of their tasks."""
    return {
        revocation.owner
        for revocation in published.revoking.values()
        if revocation.owner in alive and acked.get(revocation.owner, -1) < revocation.generation
    }


def handover_poll_delay(waited: float, poll: float, interval: float) -> float:
    """Seconds until the next poll of the pods a hand-over waits on, `waited` seconds after the revocation
    was published: `poll` at first, then a tenth of the time waited so far, never beyond the scrape
    interval. A pod that stops its tasks at once is seen within `poll`; one that takes long (a large commit,
    a stuck callback) is asked less and less often, so the polls of one hand-over stay few (about 10 plus
    10 per tenfold of waiting), and each adds at most a tenth to the time the hand-over took."""
    return min(max(poll, waited / 10), interval)
