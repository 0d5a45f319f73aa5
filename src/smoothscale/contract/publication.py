"""What one generation tells the pods: every pod's tasks, and the hand-overs still in flight (Contract 3).

The operator writes it (`smoothscale.control.handover` decides it), the pods read it (the client
library), and the planner's output uses the same per-pod `ClientAssignment`. Field names are camelCase on the
wire, snake_case in Python; every model is immutable and forbids unknown fields when built in Python, while a
publication read from the wire ignores the fields it does not know (`configmap.decode_publication`, the
versioning rule of `version`).
"""

from __future__ import annotations

from typing import Annotated

from pydantic import BaseModel, ConfigDict, Field
from pydantic.alias_generators import to_camel

from .version import CONTRACT_VERSION

TaskId = Annotated[str, Field(min_length=1, description='task id "<subtopology>_<partition>", e.g. "0_3"')]
ClientId = Annotated[str, Field(min_length=1, description="pod name, e.g. orders-0")]


class ContractModel(BaseModel):
    """Base of every contract model: camelCase aliases, strict about unknown fields, immutable."""

    model_config = ConfigDict(
        alias_generator=to_camel,
        populate_by_name=True,
        extra="forbid",
        frozen=True,
        validate_default=True,
    )


class ClientAssignment(ContractModel):
    active: list[TaskId] = Field(default_factory=list)
    standby: list[TaskId] = Field(default_factory=list)
    warmup: list[TaskId] = Field(default_factory=list)


class Revocation(ContractModel):
    """A task taken from `owner` in `generation`, not yet safe to start elsewhere."""

    owner: str
    generation: int = Field(ge=1)


class Publication(ContractModel):
    """One published generation: every pod's tasks, and the hand-overs still in flight."""

    version: int = Field(
        CONTRACT_VERSION,
        ge=1,
        description="the contract version it follows (`version.py`); absent before versions existed: 1",
    )
    generation: int = Field(ge=0)
    assignment: dict[str, ClientAssignment] = Field(default_factory=dict)
    revoking: dict[str, Revocation] = Field(default_factory=dict)

    def active_owner(self) -> dict[str, str]:
        return {task: pod for pod, roles in self.assignment.items() for task in roles.active}


EMPTY = Publication(generation=0)
