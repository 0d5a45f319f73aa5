"""Fail-over: which listed pods the step treats as gone because they stopped renewing their lease.

The step cannot tell a dead pod from a slow one, and a slow one may still be processing: so while a pod
that holds tasks could not be scraped, it held planning until the pod came back (a zone outage stopped
its tasks for as long as the outage lasted). A lease lets it tell. A pod renews its lease while it runs and
processes a task only while it holds the lease: one that cannot renew stops processing before the lease
runs out. So once the operator has seen no renewal for a whole lease, the pod processes nothing any more,
whatever became of it, and its tasks may start at once on their most caught-up copies: the step then plans
and hands over without it (it is neither a client of the plan nor alive for the hand-over). Kafka's group
coordinator does the same for a Kafka Streams app with each member's session: once no heartbeat arrived
for `session.timeout.ms`, the member is removed from the group and the next rebalance gives its actives to
the others, the bridge to their most caught-up copies (`docs/failover.md`).

The operator never compares its clock with a pod's: a renewal is a change of the pod's renewal token (a
Lease's `resourceVersion`, a simulated pod's heartbeat), timed by the operator's own clock when it first
sees the change, as client-go's leader election times its `observedTime`. The pod renewed before the
operator saw it, so the pod's lease always ends before the operator's count does. A pod first seen counts as
renewed then: an operator that starts (or restarts) waits a whole lease before it fails anything over.
A pod whose lease expired counts again as soon as it renews: it comes back as a pod that holds no task (the
generation that failed its tasks over gave them away) and gets tasks back only as any pod does, through
the plan's warmups and probing.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from .events import AppEvent, EventType, listing
from .pods import PodInfo

LEASE_READS_PER_LEASE = 3
"""How often the operator reads an app's Leases, per lease: a renewal is timed from the round that first
sees it, so the fail-over of a pod lost just after a renewal waits the lease and at most a third more."""


@dataclass(frozen=True)
class Failover:
    """The fail-over setting the step runs with (None in `RoundConfig`: it fails nothing over)."""

    seconds: float
    """How long after the operator last saw a pod renew its tasks start elsewhere: the lease (the client
    library's pods), or the session timeout (Kafka Streams apps, whose group coordinator decides)."""

    @property
    def read_interval(self) -> float:
        """Seconds between two reads of the Leases (`LEASE_READS_PER_LEASE`)."""
        return self.seconds / LEASE_READS_PER_LEASE


@dataclass(frozen=True)
class Leases:
    """What the operator has seen of the listed pods' renewals: each one's last token, when it first saw
    that token, and which pods' leases had expired at the last round."""

    seen: Mapping[str, tuple[str | None, datetime]] = field(default_factory=dict)
    expired: frozenset[str] = frozenset()

    def observe(
        self, tokens: Mapping[str, str], pods: Collection[str], now: datetime, failover: Failover
    ) -> Leases:
        """The leases after a round that listed `pods` and read their renewal `tokens` (a pod without one
        did not renew). Pods no longer listed are forgotten."""
        seen: dict[str, tuple[str | None, datetime]] = {}
        for pod in pods:
            token = tokens.get(pod)
            before = self.seen.get(pod)
            if before is None or (token is not None and token != before[0]):
                seen[pod] = (token, now)
            else:
                seen[pod] = before
        lease = timedelta(seconds=failover.seconds)
        expired = frozenset(pod for pod, (_, at) in seen.items() if now - at >= lease)
        return Leases(seen, expired)

    def next_expiry(self, now: datetime, failover: Failover) -> datetime | None:
        """When the next lease not yet expired runs out (None: none is running)."""
        lease = timedelta(seconds=failover.seconds)
        due = [at + lease for pod, (_, at) in self.seen.items() if pod not in self.expired]
        later = [moment for moment in due if moment > now]
        return min(later) if later else None


def without_expired(pods: Sequence[PodInfo], leases: Leases) -> Sequence[PodInfo]:
    """The pods the plan and the hand-over may count on: every listed pod but those whose lease expired
    (they process nothing: their tasks may start elsewhere without their acknowledgment)."""
    if not leases.expired:
        return pods
    return [pod for pod in pods if pod.name not in leases.expired]


def events(before: Leases, after: Leases) -> list[AppEvent]:
    """An Event when pods' leases expire (their tasks fail over) and when such pods renew again."""
    found = []
    lost = sorted(after.expired - before.expired)
    if lost:
        found.append(
            AppEvent(
                EventType.WARNING,
                "LeaseExpired",
                f"{listing(lost)}: no lease renewal seen for a whole lease; their tasks fail over to their "
                "most caught-up copies",
            )
        )
    back = sorted((before.expired - after.expired) & set(after.seen))
    if back:
        found.append(
            AppEvent(
                EventType.NORMAL,
                "LeaseRenewed",
                f"{listing(back)} renewed their lease again: they rejoin holding no task, and get tasks back "
                "through warmups",
            )
        )
    return found


def journal(before: Leases, after: Leases) -> list[tuple[str, Mapping[str, Any]]]:
    """A `failover` journal record when the set of pods whose lease expired changes."""
    if after.expired == before.expired:
        return []
    return [
        ("failover", {"expired": sorted(after.expired), "renewed": sorted(before.expired - after.expired)})
    ]
