"""Which pods to create, mark leaving, retire or restart: the pod-set decisions, as a pure function.

The rule is one invariant, whatever caused the change (a new `replicas`, a drain, a lost pod, a new
template): `replicas` pods of the current template revision that are not leaving.

- Scale up, lost pods, manual drains: missing pods are created (lowest free ordinal; a drained pod's
  replacement gets a new one). New pods start empty, so the planner gives them warmups before any active.
- Scale down: the excess pods are marked leaving (`smoothscale.io/leaving`), pods of an old revision first,
  then the highest ordinals; pods a person marked leaving count toward the excess. A leaving pod is deleted
  once the published assignment leaves it nothing (no task, no hand-over waiting for it), or when its
  scale-down timeout expires (the planner then lets the most caught-up pods take over).
- Swap (the drafts' online host swap): pods of the new revision are surged, up to `maxSurge` above
  `replicas`; an old pod is marked leaving only once a ready new pod stands in for it, so a template whose
  pods never become ready never drains the old ones.
- RollingRestart: one old pod at a time is deleted and recreated with its ordinal and claim, and only while
  every pod is ready and the assignment is settled, so each restarted pod is caught up before the next goes.

A pod name is reused only when the published assignment holds nothing for it: a new pod never starts with
tasks meant for the pod that had its name. The lowest free ordinal is always the one used, so a lost or
restarted pod comes back under its own name and finds its claim again.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Collection, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from enum import StrEnum

from ..resource import UpdateStrategy
from . import object_names
from .object_names import LeavingReason
from .pods import PodInfo, format_time, leaving_since


class RetireReason(StrEnum):
    DRAINED = "Drained"
    TIMED_OUT = "TimedOut"
    SCALED_TO_ZERO = "ScaledToZero"


@dataclass(frozen=True)
class PodSetInput:
    app: str
    replicas: int
    revision: str
    strategy: UpdateStrategy
    max_surge: int
    scale_down_timeout: float | None
    """Seconds, or None to wait as long as it takes."""
    delete_claims: bool
    """Whether a retired pod's state claim goes with it (storage set, `whenScaled: Delete`)."""
    pods: Sequence[PodInfo]
    holding: Collection[str]
    """Pods the published assignment gives a task, or that a hand-over still waits for."""
    settled: bool
    """The last plan is stable and fully published: a rolling restart may take the next pod."""
    now: datetime


@dataclass(frozen=True)
class Retirement:
    pod: str
    reason: RetireReason
    delete_claim: bool
    ordinal: int | None


@dataclass(frozen=True)
class PodSetPlan:
    stamp_leaving: tuple[str, ...] = ()
    """Pods a person marked leaving without a time: the operator records `now` as their `since`."""
    mark_leaving: tuple[tuple[str, str], ...] = ()
    """(pod, LeavingReason) to mark leaving."""
    unmark_leaving: tuple[str, ...] = ()
    """Pods the operator marked leaving for a scale-down that a later scale-up wants back."""
    retire: tuple[Retirement, ...] = ()
    remove_stopped: tuple[str, ...] = ()
    """Pods whose containers ended for good (Failed, Succeeded): deleted, then replaced."""
    restart: tuple[str, ...] = ()
    create: tuple[int, ...] = ()
    leaving_since: dict[str, datetime] = field(default_factory=dict)
    """Every leaving pod's `since`, as the planner must see it this round."""
    recheck_at: datetime | None = None
    """The first scale-down timeout still ahead of a leaving pod (when it is retired with tasks)."""

    @property
    def empty(self) -> bool:
        return not (
            self.stamp_leaving
            or self.mark_leaving
            or self.unmark_leaving
            or self.retire
            or self.remove_stopped
            or self.restart
            or self.create
        )


def _by_ordinal_desc(pods: Sequence[PodInfo]) -> list[PodInfo]:
    return sorted(pods, key=lambda p: (p.ordinal if p.ordinal is not None else -1, p.name), reverse=True)


def plan_pod_set(given: PodSetInput) -> PodSetPlan:
    live = [p for p in given.pods if not p.deleting]
    stopped = [p for p in live if p.stopped]
    running = [p for p in live if not p.stopped]

    since = {p.name: leaving_since(p) or given.now for p in running if p.is_leaving}
    staying = [p for p in running if not p.is_leaving]
    # Taken back before retiring: a drained pod that a later `replicas` wants again stays, rather than being
    # deleted in the round that also creates a pod to replace it (which could not reuse its name).
    unmark = _taken_back(given, [p for p in running if p.is_leaving], len(staying), since)
    staying += [p for p in running if p.name in unmark]
    retire = _retirements(given, [p for p in running if p.is_leaving and p.name not in unmark], since)
    retired = {r.pod for r in retire}
    leaving = [p for p in running if p.is_leaving and p.name not in retired and p.name not in unmark]

    stamp = tuple(p.name for p in leaving if leaving_since(p) is None)
    marks = _marks(given, staying)
    marked = {pod for pod, _ in marks}
    staying_after = [p for p in staying if p.name not in marked]
    current_after = sum(1 for p in staying_after if p.revision == given.revision)

    wanted = max(0, given.replicas - len(staying_after))
    if given.strategy is UpdateStrategy.SWAP:
        # New-revision pods still to come for the old ones that stay, within the surge allowance.
        replacements = given.replicas - current_after - wanted
        room = given.replicas + given.max_surge - (len(staying) + len(leaving) + wanted)
        wanted += max(0, min(replacements, room))

    restart = _restart(given, running, staying_after, wanted)
    create = _free_ordinals(given, wanted)
    timeout = given.scale_down_timeout
    timeouts = [since[p.name] + timedelta(seconds=timeout) for p in leaving] if timeout is not None else []
    return PodSetPlan(
        recheck_at=min(timeouts) if timeouts else None,
        stamp_leaving=stamp,
        mark_leaving=tuple(marks),
        unmark_leaving=tuple(unmark),
        retire=tuple(retire),
        remove_stopped=tuple(p.name for p in stopped),
        restart=tuple(restart),
        create=tuple(create),
        leaving_since={name: moment for name, moment in since.items() if name not in unmark},
    )


def _retirements(
    given: PodSetInput, leaving: Sequence[PodInfo], since: dict[str, datetime]
) -> list[Retirement]:
    nobody_stays = given.replicas == 0
    out = []
    for pod in leaving:
        timeout = given.scale_down_timeout
        expired = timeout is not None and since[pod.name] + timedelta(seconds=timeout) <= given.now
        if pod.name not in given.holding:
            reason = RetireReason.DRAINED
        elif expired:
            reason = RetireReason.TIMED_OUT
        elif nobody_stays:
            reason = RetireReason.SCALED_TO_ZERO  # nowhere to hand its tasks to
        else:
            continue
        out.append(Retirement(pod.name, reason, given.delete_claims, pod.ordinal))
    return out


def _taken_back(
    given: PodSetInput, leaving: Sequence[PodInfo], staying: int, since: dict[str, datetime]
) -> list[str]:
    """Pods marked leaving by a scale-down that the latest `replicas` wants again: no task moves twice."""
    missing = given.replicas - staying
    candidates = [
        p for p in leaving if p.leaving_reason == LeavingReason.SCALE_DOWN and p.revision == given.revision
    ]
    # The most recently marked first: they have handed over the fewest tasks so far.
    candidates.sort(key=lambda p: (-since[p.name].timestamp(), p.ordinal if p.ordinal is not None else -1))
    return [p.name for p in candidates[: max(0, missing)]]


def _marks(given: PodSetInput, staying: Sequence[PodInfo]) -> list[tuple[str, str]]:
    """Current pods beyond `replicas` (highest ordinals), and old-revision pods: all of them in a rolling
    restart's scale-down, or in a swap as many as ready current pods stand in for."""
    current = _by_ordinal_desc([p for p in staying if p.revision == given.revision])
    outdated = _by_ordinal_desc([p for p in staying if p.revision != given.revision])
    extra = current[: max(0, len(current) - given.replicas)]
    kept = current[len(extra) :]
    if given.strategy is UpdateStrategy.SWAP:
        covered = sum(1 for p in kept if p.ready)
        reason = LeavingReason.SWAP
    else:
        covered = len(kept)
        reason = LeavingReason.SCALE_DOWN
    count = min(len(outdated), max(0, covered + len(outdated) - given.replicas))
    return [(p.name, reason) for p in outdated[:count]] + [(p.name, LeavingReason.SCALE_DOWN) for p in extra]


def _restart(
    given: PodSetInput, running: Sequence[PodInfo], staying: Sequence[PodInfo], wanted: int
) -> list[str]:
    if given.strategy is not UpdateStrategy.ROLLING_RESTART or wanted or not given.settled:
        return []
    if any(p.is_leaving or not p.ready for p in running):
        return []
    outdated = _by_ordinal_desc([p for p in staying if p.revision != given.revision])
    return [outdated[0].name] if outdated else []


def _free_ordinals(given: PodSetInput, count: int) -> list[int]:
    """The `count` lowest ordinals no running pod has.

    An ordinal whose pod is still going away (being deleted, or stopped) or that the published assignment
    still names is not skipped but waited for: its pod is created a round or two later, so that a lost,
    stopped or restarted pod comes back under its own name, with its own claim.
    """
    running = {p.ordinal for p in given.pods if not (p.deleting or p.stopped)}
    waited = {p.ordinal for p in given.pods if p.deleting or p.stopped}
    waited |= {object_names.ordinal_of(given.app, pod) for pod in given.holding}
    out: list[int] = []
    candidate = 0
    while count > 0:
        if candidate not in running:
            count -= 1
            if candidate not in waited:
                out.append(candidate)
        candidate += 1
    return out


def as_planned(pods: Sequence[PodInfo], plan: PodSetPlan, now: datetime) -> list[PodInfo]:
    """The pods with a round's decisions applied, as planning must see them in that round: marks and
    take-backs count at once, and a pod being deleted leaves planning but stays alive for the hand-over
    (it may be processing until it is gone)."""
    deleted = {r.pod for r in plan.retire} | set(plan.remove_stopped) | set(plan.restart)
    marked = {pod for pod, _ in plan.mark_leaving} | set(plan.stamp_leaving)
    return [_as_planned(pod, plan, deleted, marked, now) for pod in pods]


def _as_planned(
    pod: PodInfo, plan: PodSetPlan, deleted: set[str], marked: set[str], now: datetime
) -> PodInfo:
    if pod.name in deleted:
        return dataclasses.replace(pod, deleting=True)
    if pod.name in marked:
        return dataclasses.replace(pod, leaving=format_time(plan.leaving_since.get(pod.name, now)))
    if pod.name in plan.unmark_leaving:
        return dataclasses.replace(pod, leaving=None, leaving_reason=None)
    return pod
