"""A whole `StreamsApp` object, as `kubectl apply` sends it and the API server returns it."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field
from pydantic.alias_generators import to_camel

from .spec import StreamsAppSpec
from .status import StreamsAppStatus

__all__ = ["StreamsApp"]


class StreamsApp(BaseModel):
    """A stream processing app whose pods the operator runs, scales and swaps without rebalance downtime.

    Metadata stays a plain mapping: the API server owns and validates it, the operator only reads names,
    labels and the generation from it.
    """

    model_config = ConfigDict(
        alias_generator=to_camel, populate_by_name=True, serialize_by_alias=True, extra="ignore", frozen=True
    )

    # Literals rather than names.API_VERSION / names.KIND: a Literal must be spelt out (a test ties them).
    api_version: Literal["smoothscale.io/v1alpha1"] = "smoothscale.io/v1alpha1"
    kind: Literal["StreamsApp"] = "StreamsApp"
    metadata: dict[str, Any] = Field(default_factory=dict)
    spec: StreamsAppSpec
    status: StreamsAppStatus | None = None
