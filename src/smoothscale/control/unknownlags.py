"""Tasks whose lag is unknown: their changelog could not be read from Kafka (deleted, not readable).

A copy's lag is its changelog's end offset minus what it restored. When the operator cannot read a
changelog's end offsets, what a pod reports against it cannot be trusted either: a client that never fetched
the topic reads its end as 0 and reports lag 0 (Kafka Streams' restore consumer and the bridge alike), so a
copy that holds nothing would pass for caught up and the planner would move the task's active onto it, a
whole restore during which the task processes nothing. Such a task's lags are therefore unknown, never 0:
only the pod running it as active keeps its lag (it is the one copy sure to hold the state), every other
copy counts as behind, and the task's size is at least one record more than the acceptable recovery lag, so
that a copy without a lag is not caught up either (KIP-441 counts it the whole changelog behind). The task
stays where it runs until the changelog can be read again.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from dataclasses import replace

from smoothscale.contract.publication import Publication

from .snapshot import ClientObservation


def without_unknown_lags(
    clients: Sequence[ClientObservation], published: Publication, unknown: Collection[str]
) -> list[ClientObservation]:
    """`clients` with their lags on the `unknown` tasks left out, but for the task's active in `published`
    (or the pod it is being revoked from)."""
    if not unknown:
        return list(clients)
    owners = {task: pod for pod, roles in published.assignment.items() for task in roles.active}
    owners.update({task: revoking.owner for task, revoking in published.revoking.items()})
    return [
        replace(
            client,
            lags={
                task: lag
                for task, lag in client.lags.items()
                if task not in unknown or owners.get(task) == client.pod
            },
        )
        for client in clients
    ]


def sizes_with_unknown(
    sizes: Mapping[str, int], unknown: Collection[str], acceptable_recovery_lag: int
) -> dict[str, int]:
    """Each task's changelog size, those of the `unknown` tasks raised above `acceptable_recovery_lag`: a copy
    without a reported lag then counts as behind on them."""
    floor = acceptable_recovery_lag + 1
    return {**sizes, **{task: max(sizes.get(task, 0), floor) for task in unknown}}
