"""`spec.autoscaling`: whether the operator only recommends a size (`status.autoscaling`) or sets
`spec.replicas` itself, within which bounds, and toward which target (docs/autoscaling.md)."""

from __future__ import annotations

from enum import StrEnum

from pydantic import ConfigDict, Field

from .base import SpecModel
from .fields import Duration

__all__ = ["AutoscalingMode", "AutoscalingSpec", "AutoscalingTarget"]


class AutoscalingMode(StrEnum):
    """Whether the operator acts on its own sizing."""

    RECOMMEND = "Recommend"
    """Only `status.autoscaling.recommendedReplicas`: an HPA, KEDA or a person sets `spec.replicas`."""
    ACT = "Act"
    """The operator sets `spec.replicas` itself, through the scale subresource."""


class AutoscalingTarget(SpecModel):
    """What the app is sized for."""

    max_lag: Duration = Field(
        "60s",
        description="The longest acceptable lag, in time of input (how long the next record to process may "
        "have waited), e.g. 60s. A scale-out is sized so that the lag its own migration lets accrue drains "
        "within it.",
    )
    busy_ratio: float = Field(
        0.8,
        gt=0,
        le=1,
        description="The fraction of the time the pods' stream threads may be busy at steady load; the rest "
        "is headroom (for a restore of moved state, for swings of the input).",
    )


class AutoscalingSpec(SpecModel):
    """The operator's autoscaler."""

    model_config = ConfigDict(
        json_schema_extra={
            "x-kubernetes-validations": [
                {
                    "rule": "!has(self.maxReplicas) || !has(self.minReplicas) || "
                    "self.minReplicas <= self.maxReplicas",
                    "message": "minReplicas must not exceed maxReplicas",
                    "fieldPath": ".minReplicas",
                }
            ]
        }
    )

    mode: AutoscalingMode = Field(
        AutoscalingMode.RECOMMEND,
        description="Recommend (the default): only status.autoscaling.recommendedReplicas. Act: the operator "
        "sets spec.replicas itself; it refuses to while an HPA or a KEDA ScaledObject targets the app.",
    )
    min_replicas: int = Field(1, ge=1, description="The fewest pods the operator sets in Act mode.")
    max_replicas: int | None = Field(
        None, ge=1, description="The most pods the operator sets in Act mode; absent: one per task."
    )
    target: AutoscalingTarget = Field(
        default_factory=AutoscalingTarget,
        description="What the app is sized for.",
        json_schema_extra={"default": {}},
    )
    scale_up_stabilization: Duration = Field(
        "0s",
        description="A scale-out on load waits until the input rate has stayed high this long (the lowest "
        "rate of the window is sized for); a backlog that would not drain in time does not wait.",
    )
    scale_down_stabilization: Duration = Field(
        "5m",
        description="A scale-in is sized for the highest input rate of this window, and never comes sooner "
        "than this after the last scaling decision.",
    )
