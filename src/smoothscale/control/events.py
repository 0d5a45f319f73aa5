"""Kubernetes Events for the steps people follow with `kubectl describe sapp` / `kubectl get events`.

Pure builders: each returns the events (type, CamelCase reason, message) for one kind of step, so tests
check them as data and the reconciler only posts them. Steps that repeat every few seconds while nothing
changes (a pod still unreachable, a spec still invalid) produce an event only when they start and end.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence, Set
from dataclasses import dataclass
from enum import StrEnum

from smoothscale.assignor.models import RackUnknown
from smoothscale.contract.publication import Publication

from .observed import ScrapeFailure
from .scaling import PodSetPlan, RetireReason
from .zones import ZONE_LABEL

_LISTED = 8  # items named in one message; the rest are counted


class EventType(StrEnum):
    NORMAL = "Normal"
    WARNING = "Warning"


@dataclass(frozen=True)
class AppEvent:
    type: EventType
    reason: str
    message: str


def listing(items: Sequence[str]) -> str:
    shown = ", ".join(items[:_LISTED])
    more = len(items) - _LISTED
    return f"{shown} and {more} more" if more > 0 else shown


_RETIRED = {
    RetireReason.DRAINED: "its tasks have moved",
    RetireReason.TIMED_OUT: "its scale-down timeout expired; the most caught-up pods take over its tasks",
    RetireReason.SCALED_TO_ZERO: "replicas is 0, there is no pod to hand its tasks to",
}


def pod_set_events(plan: PodSetPlan, app: str) -> list[AppEvent]:
    normal, warning = EventType.NORMAL, EventType.WARNING
    events = [
        AppEvent(normal, "DrainRequested", f"{pod} was marked leaving by hand: it is replaced, then removed")
        for pod in plan.stamp_leaving
    ]
    events += [
        AppEvent(normal, "PodLeaving", f"{pod} marked leaving ({reason}): its tasks move before it goes")
        for pod, reason in plan.mark_leaving
    ]
    events += [
        AppEvent(normal, "PodKept", f"{pod} is no longer leaving: replicas were raised again")
        for pod in plan.unmark_leaving
    ]
    events += [
        AppEvent(
            warning if r.reason is RetireReason.TIMED_OUT else normal,
            "PodRetired",
            f"{r.pod} deleted{' with its state claim' if r.delete_claim else ''}: {_RETIRED[r.reason]}",
        )
        for r in plan.retire
    ]
    events += [
        AppEvent(warning, "StoppedPodRemoved", f"{pod} stopped for good: deleted, to be replaced")
        for pod in plan.remove_stopped
    ]
    events += [
        AppEvent(normal, "PodRestarting", f"{pod} is restarted on the new template, keeping its state claim")
        for pod in plan.restart
    ]
    if plan.create:
        pods = [f"{app}-{ordinal}" for ordinal in plan.create]
        events.append(AppEvent(normal, "PodsCreated", f"created {listing(pods)}"))
    return events


def lost_pod_events(pods: Iterable[str]) -> list[AppEvent]:
    return [
        AppEvent(
            EventType.WARNING, "PodLost", f"{pod} disappeared: its tasks are reassigned, then it is recreated"
        )
        for pod in sorted(pods)
    ]


def publication_event(before: Publication, after: Publication) -> AppEvent:
    """One event per generation, named after its most notable step."""
    owners_before = before.active_owner()
    owners_after = after.active_owner()
    if not owners_after and not after.revoking:
        message = (
            f"generation {after.generation} starts nothing: every pod stops its tasks before any starts again"
        )
        return AppEvent(EventType.WARNING, "AssignmentBarrier", message)
    revoked = sorted(t for t in after.revoking if t not in before.revoking)
    moved = sorted(t for t, pod in owners_after.items() if owners_before.get(t, pod) != pod)
    handed = sorted(t for t in before.revoking if t in owners_after)
    placed = sorted(t for t in owners_after if t not in owners_before and t not in before.revoking)
    warmups_before = {(p, t) for p, a in before.assignment.items() for t in a.warmup}
    started = sorted(
        f"{t} on {p}" for p, a in after.assignment.items() for t in a.warmup if (p, t) not in warmups_before
    )
    steps = []
    reason = "AssignmentPublished"
    if started:
        steps.append(f"warmups started: {listing(started)}")
        reason = "WarmupsStarted"
    if placed:
        steps.append(f"placed {listing([f'{t} on {owners_after[t]}' for t in placed])}")
        reason = "TasksPlaced"
    if revoked:
        steps.append(f"revoked {listing([f'{t} from {after.revoking[t].owner}' for t in revoked])}")
        reason = "HandOverStarted"
    if handed or moved:
        tasks = sorted(set(handed) | set(moved))
        steps.append(f"now active on their new pods: {listing([f'{t} on {owners_after[t]}' for t in tasks])}")
        reason = "TasksMoved"
    detail = "; ".join(steps) if steps else "standbys and warmups updated"
    return AppEvent(EventType.NORMAL, reason, f"generation {after.generation}: {detail}")


def scrape_events(
    failing_before: Set[str], failures: Mapping[str, ScrapeFailure], results: Mapping[str, object]
) -> list[AppEvent]:
    """A warning when a pod starts failing, a note when a pod that failed answers again."""
    events = []
    for pod, failure in sorted(failures.items()):
        if pod not in failing_before:
            message = f"{pod}: {failure.reason}: {failure.message}; its tasks stay where they are"
            events.append(AppEvent(EventType.WARNING, "MetricsUnavailable", message))
    for pod in sorted(failing_before - set(failures)):
        if pod in results:
            events.append(AppEvent(EventType.NORMAL, "MetricsRecovered", f"{pod} reports its metrics again"))
    return events


def spec_events(problems_before: Sequence[str] | None, problems: Sequence[str] | None) -> list[AppEvent]:
    if problems and list(problems) != list(problems_before or []):
        message = (
            "the operator cannot act on this spec; the last good assignment keeps running: "
            + "; ".join(problems)
        )
        return [AppEvent(EventType.WARNING, "InvalidSpec", message)]
    if not problems and problems_before:
        return [AppEvent(EventType.NORMAL, "SpecValid", "the spec is valid again")]
    return []


def rack_unknown_message(unknown: RackUnknown) -> str:
    """Which pods and tasks the plan placed without rack awareness, and why."""
    parts = []
    if unknown.pods:
        parts.append(f"pods without a zone (their node has no {ZONE_LABEL} label): {listing(unknown.pods)}")
    if unknown.tasks:
        parts.append(f"tasks reading partitions whose replicas' racks are unknown: {listing(unknown.tasks)}")
    return "rack awareness is off for " + "; ".join(parts)


def rack_events(before: RackUnknown | None, after: RackUnknown) -> list[AppEvent]:
    """A warning when a plan first lacks rack data (or lacks other data than the last one), a note when
    every pod's zone and every input's racks are known again."""
    missing = bool(after.pods or after.tasks)
    was_missing = before is not None and bool(before.pods or before.tasks)
    if missing and after != before:
        return [AppEvent(EventType.WARNING, "RackAwarenessDegraded", rack_unknown_message(after))]
    if was_missing and not missing:
        message = "every pod's zone and every input's racks are known: rack awareness is on for all"
        return [AppEvent(EventType.NORMAL, "RackAwarenessRestored", message)]
    return []
