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
class PodMetrics:
    lags: dict[str, int] = field(default_factory=dict)
    end_offsets: dict[str, int] = field(default_factory=dict)
    generation: int | None = None
    """The last generation the pod has fully applied, or None if it reports none yet."""
    process_rates: dict[str, float] = field(default_factory=dict)
    """Records per second each task processes on the pod (0 where it only restores or stands by)."""


@dataclass(frozen=True)
class ScrapeFailure:
    reason: FailureReason
    message: str


ScrapeResult = PodMetrics | ScrapeFailure
