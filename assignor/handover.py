"""The two-phase hand-over of active tasks between pods, as a pure state machine (Contract 3, see
docs/architecture.md).

A plan says where tasks should run; publishing it directly could tell a new owner to start a task that the
old owner is still processing. So a moving active is handed over in two generations: the first revokes it
from the old owner (which keeps its state, as a standby if the plan wants one there), the second, published
only once the old owner has reported a generation at least as new as the revoking one (or is gone), makes it
active on the new owner. No generation ever lists a task active on two pods.

The pending revocations travel with the publication (and so with the assignment ConfigMap), so an operator
restarted mid-migration resumes from what it published, not from memory. The simulator drives this same
module, so it measures the protocol the operator runs.
"""

from __future__ import annotations

from collections.abc import Mapping, Set

from smoothscale.contract.ordering import natural_key, natural_sorted
from smoothscale.contract.publication import ClientAssignment, Publication, Revocation


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
    return {pod: published.assignment.get(pod, ClientAssignment()) for pod in pods}


def is_settled(published: Publication, desired: Mapping[str, ClientAssignment]) -> bool:
    """True when the published generation is the desired assignment, with no hand-over in flight."""
    if published.revoking:
        return False
    pods = set(desired) | set(published.assignment)
    return all(
        published.assignment.get(p, ClientAssignment()) == desired.get(p, ClientAssignment()) for p in pods
    )
