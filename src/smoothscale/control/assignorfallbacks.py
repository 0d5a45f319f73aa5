"""Fallbacks of a Kafka Streams app's assignor, as its pods count them: surfaced on the StreamsApp.

The bridge's assignor (on the group leader) counts every rebalance it did not follow the plan as published,
by reason, in `smoothscale_bridge_assignor_fallbacks_total{reason}`. A fallback is safe (the plan is kept for
the members present, the rest placed as Kafka's high-availability assignor would) but means the operator's
plan is not what runs: this module turns the counters' increases into a Warning Event naming the reasons and
the pods that counted them, and into the `AssignorFallback` condition, True while the last fallback is
recent. Pure: the previous memory and a round's scrapes in, the next memory and what to report out.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from .events import AppEvent, EventType
from .observed import PodMetrics, ScrapeResult
from .status import Problem

RECENT = timedelta(minutes=10)
"""How long the condition stays True after the last fallback: the bridge schedules a follow-up rebalance a
minute after each, so a cause still present shows again well within this."""


@dataclass(frozen=True)
class FallbackMemory:
    """The counters last seen per pod, and the last fallback: what, on which pods, when."""

    counts: Mapping[str, Mapping[str, int]] = field(default_factory=dict)
    last: Problem | None = None
    last_at: datetime | None = None

    @property
    def expires(self) -> datetime | None:
        """When the last fallback stops being recent (status no longer reports it)."""
        return None if self.last_at is None else self.last_at + RECENT


def observe_fallbacks(
    memory: FallbackMemory, results: Mapping[str, ScrapeResult], now: datetime
) -> tuple[FallbackMemory, list[AppEvent]]:
    """The next memory and the Events of the fallbacks counted since the last scrape.

    A pod seen for the first time sets its baseline (its earlier fallbacks were reported, or predate the
    operator: an operator restart must not repeat them); a counter lower than before is a restarted pod,
    whose new count is all new.
    """
    counts = dict(memory.counts)
    pods_by_reason: dict[str, list[str]] = {}
    for pod in sorted(results):
        result = results[pod]
        if not isinstance(result, PodMetrics):
            continue
        before = memory.counts.get(pod)
        counts[pod] = dict(result.fallbacks)
        if before is None:
            continue
        for reason, count in result.fallbacks.items():
            seen = before.get(reason, 0)
            if count > seen or (count < seen and count > 0):
                pods_by_reason.setdefault(reason, []).append(pod)
    for pod in list(counts):
        if pod not in results:
            del counts[pod]  # gone: a pod of the same name later is a new pod
    if not pods_by_reason:
        return FallbackMemory(counts, memory.last, memory.last_at), []
    described = "; ".join(f"{reason} on {', '.join(pods)}" for reason, pods in sorted(pods_by_reason.items()))
    message = (
        f"the group leader did not follow the published plan ({described}): it kept the plan for the pods "
        "present, placed the rest as Kafka's high-availability assignor would, and scheduled a follow-up"
    )
    problem = Problem("AssignorFellBack", message)
    return FallbackMemory(counts, problem, now), [AppEvent(EventType.WARNING, "AssignorFallback", message)]


def fallback_problem(memory: FallbackMemory, now: datetime) -> Problem | None:
    """The `AssignorFallback` condition's problem: the last fallback while it is recent."""
    if memory.last is None or memory.last_at is None or now - memory.last_at > RECENT:
        return None
    return memory.last
