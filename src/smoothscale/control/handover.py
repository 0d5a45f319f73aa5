"""The hand-over, in one place: what to publish next, the barrier after a lost ConfigMap, who must
acknowledge, and when to ask them (Contract 3, see docs/architecture.md and docs/handover.md).

A plan says where tasks should run; publishing it directly could tell a new owner to start a task that the
old owner is still processing. So a moving active is handed over in two generations: the first revokes it
from the old owner (which keeps its state, as a standby if the plan wants one there), the second, published
only once the old owner has reported a generation at least as new as the revoking one (or is gone), makes it
active on the new owner. No generation ever lists a task active on two pods (`next_publication`).

Around that state machine, what the operator knows and the planner does not: a ConfigMap can be lost while
pods still run what it said (`barrier_after_loss`, `barrier_pending`), a plan can name a pod that has gone
since (`desired_reachable`), only pods that report a generation follow their assignment (a running task moves
only to one of them), and Kafka Streams apps hand over through Kafka's own rebalance (`plan_as_published`).
`next_generation` combines them.

Between two rounds a pending hand-over is followed more closely: `HandOverWait` is what the last round saw
(the live pods, their acknowledgments, where to scrape them), `awaited_owners` the pods still to acknowledge,
and `handover_poll_delay` the schedule of the polls that ask only them.

The pending revocations travel with the publication (and so with the assignment ConfigMap), so an operator
restarted mid-migration resumes from what it published, not from memory. The operator, the simulator and
`smoothscale explain` all decide through this module.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Set
from dataclasses import dataclass, field, replace
from datetime import datetime

from smoothscale.contract.ordering import natural_key, natural_sorted
from smoothscale.contract.publication import ClientAssignment, Publication, Revocation

_NOTHING = ClientAssignment()
"""A pod's roles where a generation names it not (one immutable value: most rounds ask for it often)."""


def _settled(revocation: Revocation, acked: Mapping[str, int], alive: Set[str]) -> bool:
    """The old owner has stopped the task: it reported the revoking generation, or it is gone."""
    return revocation.owner not in alive or acked.get(revocation.owner, -1) >= revocation.generation


def next_publication(
    published: Publication,
    desired: Mapping[str, ClientAssignment],
    acked: Mapping[str, int],
    alive: Set[str],
    ready: Set[str] | None = None,
    max_warmups: int | None = None,
) -> Publication | None:
    """The next generation to publish toward `desired`, or None when nothing would change.

    `acked` holds the generation each pod reports as fully applied; `alive` the pods that may still be
    processing (a deleted pod processes nothing). Pods missing from `desired` get an empty assignment.
    `ready`, when given, holds the pods that would start a task at once (their client is up and follows the
    assignment): a task another pod is running moves only to one of them, and until its new pod is ready it
    stays where it runs, so that a pod still starting never turns a hand-over into a wait for its start.
    With `max_warmups` (maxWarmupReplicas) no generation lists more warmups than that: a new owner still
    restoring a task while the old owner stops it holds a warmup like any other (it restores, and the
    status counts it), so a new warmup waits for a free slot (see `_cap_warmups`).
    """
    generation = published.generation + 1
    owners = published.active_owner()
    revoking = {t: r for t, r in published.revoking.items() if not _settled(r, acked, alive)}
    pods = natural_sorted(set(desired) | {p for p in published.assignment if p in alive})
    roles: dict[str, dict[str, set[str]]] = {
        pod: {
            "active": set(),
            "standby": set(desired[pod].standby) if pod in desired else set(),
            "warmup": set(desired[pod].warmup) if pod in desired else set(),
        }
        for pod in pods
    }
    desired_owner = {task: pod for pod, a in desired.items() for task in a.active}
    handing: set[tuple[str, str]] = set()  # (pod, task) restoring until the old owner has stopped it
    for task, target in desired_owner.items():
        owner = owners.get(task)
        pending = revoking.get(task)
        if pending is not None and pending.owner != target:
            _keep_restoring(roles[target], published.assignment.get(target), task)
            handing.add((target, task))
            continue  # the old owner may still be processing it: start it nowhere yet
        if pending is not None or owner is None or owner == target or owner not in alive:
            revoking.pop(task, None)  # handed back to the pod that never stopped, or no one to wait for
            roles[target]["active"].add(task)
        elif ready is not None and target not in ready:
            roles[owner]["active"].add(task)  # its new pod is not up yet: it keeps running where it runs
        else:
            revoking[task] = Revocation(owner=owner, generation=generation)
            _keep_restoring(roles[target], published.assignment.get(target), task)
            handing.add((target, task))
    for task, owner in owners.items():
        if task not in desired_owner and owner in alive:
            # Stopped without a new owner (e.g. a stop-the-world rebalance): whoever gets it next waits too.
            revoking[task] = Revocation(owner=owner, generation=generation)
    for pod_roles in roles.values():
        # One copy per pod: a pod about to run a task keeps restoring it meanwhile, never twice.
        pod_roles["standby"] -= pod_roles["active"]
        pod_roles["warmup"] -= pod_roles["active"] | pod_roles["standby"]
    for task in revoking:
        for pod_roles in roles.values():
            pod_roles["active"].discard(task)
    if max_warmups is not None:
        _cap_warmups(roles, published, handing, max_warmups)
    assignment = {
        pod: ClientAssignment(
            active=natural_sorted(r["active"]),
            standby=natural_sorted(r["standby"]),
            warmup=natural_sorted(r["warmup"]),
        )
        for pod, r in roles.items()
    }
    candidate = Publication(
        generation=generation, assignment=assignment, revoking=dict(sorted(revoking.items()))
    )
    unchanged = candidate.assignment == _normalised(published, pods) and set(published.assignment) <= set(
        pods
    )
    if unchanged and candidate.revoking == published.revoking:
        return None
    return candidate


def _cap_warmups(
    roles: dict[str, dict[str, set[str]]], published: Publication, handing: Set[tuple[str, str]], cap: int
) -> None:
    """Leave at most `cap` warmups: hand-over copies first (their task is about to start there), then those
    already published (restores in progress), then new ones in natural order; the others wait for a later
    generation. Hand-over copies were warmups of the previous generation, which held `cap` at most, so
    they alone never exceed it unless the cap was lowered meanwhile."""

    def rank(pod: str, task: str) -> tuple[int, tuple[object, ...]]:
        before = published.assignment.get(pod)
        kept = 0 if (pod, task) in handing else 1 if before is not None and task in before.warmup else 2
        return kept, (natural_key(task), natural_key(pod))

    copies = sorted(((pod, task) for pod, r in roles.items() for task in r["warmup"]), key=lambda c: rank(*c))
    for pod, task in copies[cap:]:
        if (pod, task) not in handing:
            roles[pod]["warmup"].discard(task)


def _keep_restoring(roles: dict[str, set[str]], before: ClientAssignment | None, task: str) -> None:
    """Until it may start a task, the next owner holds it as the warmup or standby it had (or a standby)."""
    roles["warmup" if before is not None and task in before.warmup else "standby"].add(task)


def _normalised(published: Publication, pods: list[str]) -> dict[str, ClientAssignment]:
    return {pod: published.assignment.get(pod, _NOTHING) for pod in pods}


def is_settled(published: Publication, desired: Mapping[str, ClientAssignment]) -> bool:
    """True when the published generation is the desired assignment, with no hand-over in flight."""
    if published.revoking:
        return False
    pods = set(desired) | set(published.assignment)
    return all(published.assignment.get(p, _NOTHING) == desired.get(p, _NOTHING) for p in pods)


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
    planned = desired is not None and desired_reachable(desired, alive)
    if kafka_rebalances and desired is not None and planned:
        # No barrier to wait on: Kafka's rebalance keeps a task off two pods, and a bridge applies a
        # generation only when its tasks follow it, which an empty one never does while it holds tasks.
        above = published if barrier is None else Publication(generation=barrier - 1)
        return plan_as_published(above, desired, alive)
    if barrier is not None:
        return Publication(generation=barrier)
    if barrier_pending(published, acked, alive):
        return None  # some pod may still run what a lost generation gave it
    if desired is None or not planned:
        return None  # nothing planned yet, or the plan names a pod that is gone: wait for the next plan
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
    assignment = {pod: desired.get(pod, _NOTHING) for pod in pods}
    if (
        not published.revoking
        and assignment == {pod: published.assignment.get(pod, _NOTHING) for pod in pods}
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


@dataclass(frozen=True)
class HandOverWait:
    """What the polls between rounds need from the last round: the live pods, the generations they
    acknowledged (updated by the polls), where to scrape them, the spec's hand-over settings, and when the
    last generation was published. An immutable value: each round and each poll makes the next one."""

    alive: frozenset[str] = frozenset()
    acked: Mapping[str, int] = field(default_factory=dict)
    urls: Mapping[str, str] = field(default_factory=dict)
    status_generation: int = 0
    """The generation the app's status last reported as published (a lost ConfigMap is rebuilt above it)."""
    max_warmups: int | None = None
    """The spec's maxWarmupReplicas: no generation lists more warmups."""
    kafka_rebalances: bool = False
    """The pods run Kafka Streams (`spec.runtime`): Kafka's rebalance hands tasks over."""
    published_at: datetime | None = None
    polls: int = 0
    """Pods polled since the last publication."""

    def awaited(self, published: Publication) -> set[str]:
        """The pods a pending hand-over waits on that can be polled (they have a metrics URL)."""
        return awaited_owners(published, self.acked, self.alive) & set(self.urls)

    def next(
        self, published: Publication, desired: Mapping[str, ClientAssignment] | None
    ) -> Publication | None:
        """`next_generation` from what this wait knows; a pod that reports a generation follows the
        assignment, so only those are ready to take a running task."""
        return next_generation(
            published,
            desired,
            self.acked,
            self.alive,
            self.status_generation,
            ready=set(self.acked),
            kafka_rebalances=self.kafka_rebalances,
            max_warmups=self.max_warmups,
        )

    def polled(self, generations: Mapping[str, int | None], asked: int) -> HandOverWait:
        """After a poll that asked `asked` pods: the generations they reported (None: none reported)."""
        acked = {**self.acked, **{pod: g for pod, g in generations.items() if g is not None}}
        return replace(self, acked=acked, polls=self.polls + asked)

    def after_publishing(self, now: datetime) -> HandOverWait:
        return replace(self, published_at=now, polls=0)

    def poll_delay(self, published: Publication, now: datetime, poll: float, interval: float) -> float | None:
        """Seconds until the next poll, or None while no hand-over waits on a pod that can be asked."""
        if self.published_at is None or not self.awaited(published):
            return None
        return handover_poll_delay((now - self.published_at).total_seconds(), poll, interval)
