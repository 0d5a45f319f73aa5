"""What a Kafka Streams app's pods report about the app itself, carried from round to round: the fallbacks
of its assignor (`assignorfallbacks`) and its topology (`learnedtopology`). One memory and two steps, so that
the reconciler (and any other driver of the control core) adds one call per round and one per status.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime

from ..resource import StreamsAppSpec
from .assignorfallbacks import FallbackMemory, fallback_problem, observe_fallbacks
from .events import AppEvent, EventType
from .learnedtopology import learned_topology, topology_differences
from .observed import LearnedSubtopology, ScrapeResult
from .status import Problem


@dataclass(frozen=True)
class AppReport:
    fallbacks: FallbackMemory = field(default_factory=FallbackMemory)
    topology: tuple[LearnedSubtopology, ...] | None = None
    """The last topology the pods reported (kept while no pod reports one: e.g. the leader restarting)."""
    differences: tuple[str, ...] = ()
    """How spec.topology differs from `topology`."""


def observe_app_report(
    memory: AppReport, results: Mapping[str, ScrapeResult], spec: StreamsAppSpec | None, now: datetime
) -> tuple[AppReport, list[AppEvent]]:
    """The next memory, and the Events: fallbacks counted since the last round, a topology mismatch that
    appears or changes (a Warning naming each difference), and one that is resolved."""
    fallbacks, events = observe_fallbacks(memory.fallbacks, results, now)
    topology = learned_topology(results) or memory.topology
    differences: tuple[str, ...] = ()
    if topology is not None and spec is not None and spec.topology.subtopologies:
        differences = tuple(topology_differences(spec.topology, topology))
    if differences and differences != memory.differences:
        events.append(AppEvent(EventType.WARNING, "TopologyMismatch", _mismatch(differences)))
    elif memory.differences and not differences:
        events.append(AppEvent(EventType.NORMAL, "TopologyMatches", "spec.topology matches the app's again"))
    return AppReport(fallbacks, topology, differences), events


def report_problems(
    memory: AppReport, now: datetime
) -> tuple[Problem | None, Sequence[LearnedSubtopology] | None, Problem | None]:
    """For status: the AssignorFallback problem, the reported topology, the TopologyMismatch problem."""
    mismatch = Problem("TopologyDiffers", _mismatch(memory.differences)) if memory.differences else None
    return fallback_problem(memory.fallbacks, now), memory.topology, mismatch


def _mismatch(differences: Sequence[str]) -> str:
    return "spec.topology disagrees with the topology the app reports: " + "; ".join(differences)
