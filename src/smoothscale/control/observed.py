"""What one scrape of a pod yields, as the control core reads it: the pod's Contract 3 metrics, or why there
are none. The scraper (`smoothscale.operator.scrape`) produces these; the simulator produces them from its
simulated pods; every decision downstream reads only these types.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum


class FailureReason(StrEnum):
    UNREACHABLE = "Unreachable"
    HTTP_ERROR = "HttpError"
    INVALID_METRICS = "InvalidMetrics"


@dataclass(frozen=True)
class LearnedSubtopology:
    """One subtopology as a Kafka Streams app's group leader reported it (the bridge's topology report)."""

    name: str
    partitions: int
    stateful: bool
    input_topics: tuple[str, ...] = ()
    changelog_topics: tuple[str, ...] = ()
    """Empty for a stateful subtopology whose stores all have logging disabled: nothing to restore from."""


@dataclass(frozen=True)
class PodMetrics:
    lags: dict[str, int] = field(default_factory=dict)
    end_offsets: dict[str, int] = field(default_factory=dict)
    generation: int | None = None
    """The last generation the pod has fully applied, or None if it reports none yet."""
    process_rates: dict[str, float] = field(default_factory=dict)
    """Records per second each task processes on the pod (0 where it only restores or stands by)."""
    input_lags: dict[str, int] = field(default_factory=dict)
    """Input records each task it runs active has not processed yet (optional)."""
    busy_ratio: float | None = None
    """The fraction of the last tick the pod's processing was busy; None: the pod reports none."""
    fallbacks: dict[str, int] = field(default_factory=dict)
    """Kafka Streams pods: rebalances the pod led without following the plan as published, by reason."""
    topology: tuple[LearnedSubtopology, ...] = ()
    """Kafka Streams pods: the app's subtopologies as the pod last saw them leading a rebalance."""


@dataclass(frozen=True)
class ScrapeFailure:
    reason: FailureReason
    message: str


ScrapeResult = PodMetrics | ScrapeFailure
