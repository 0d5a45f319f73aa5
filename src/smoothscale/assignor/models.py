"""The planner's public contract (Contract 1, docs/architecture.md) as pydantic models.

JSON field names are camelCase; Python attributes are snake_case. Every model forbids unknown fields so that
a typo in a snapshot is reported instead of silently ignored.
"""

from __future__ import annotations

from enum import StrEnum
from typing import Annotated

from pydantic import AwareDatetime, Field

from smoothscale.contract.publication import ClientAssignment, ClientId, ContractModel, TaskId

# The bounds of the planner's settings, defined once: the planner's config (Contract 1) and the StreamsApp's
# `spec.assignment` (Contract 2, `src/smoothscale/resource/spec.py`) both use them.
NumStandbys = Annotated[int, Field(ge=0, le=16)]
RecoveryLag = Annotated[int, Field(ge=0)]
WarmupReplicas = Annotated[int, Field(ge=1)]
PlacementCost = Annotated[int, Field(ge=0, le=1000)]
BalanceFactor = Annotated[int, Field(ge=1, le=1000)]


class RackStrategy(StrEnum):
    """KIP-925's strategies: none, min cost (4.B.I), min cost with balanced subtopologies (4.B.II)."""

    NONE = "none"
    MIN_TRAFFIC = "min_traffic"
    BALANCE_SUBTOPOLOGY = "balance_subtopology"


class CatchUpTrigger(StrEnum):
    """When a caught-up warmup calls for a new plan (the drafts' `learn.partial.rebalance`)."""

    EAGER = "eager"
    BATCHED = "batched"


class BalanceBy(StrEnum):
    """What the target balances per unit of capacity: task counts, or the sum of task weights."""

    COUNT = "count"
    WEIGHT = "weight"


class RackAwareConfig(ContractModel):
    strategy: RackStrategy = Field(
        RackStrategy.BALANCE_SUBTOPOLOGY,
        description="none (racks ignored, subtopologies spread) | min_traffic (KIP-925 4.B.I, subtopologies "
        "may cluster) | balance_subtopology (4.B.II, subtopologies spread)",
    )
    traffic_cost: PlacementCost = Field(10, description="cost of one input partition read from another rack")
    non_overlap_cost: PlacementCost = Field(
        1, description="cost of placing a task away from the client that holds it now"
    )


def caught_up(lag: float | None, acceptable: int) -> bool:
    """KIP-441's "caught up", the one definition: a copy at most `acceptable` records (acceptableRecoveryLag)
    behind its changelog's end may take over as active without a restore that stops processing. A lag not
    reported is not caught up. (`cluster.caught_up_mask` is the same over an array of lags.)"""
    return lag is not None and lag <= acceptable


class PlannerConfig(ContractModel):
    num_standbys: NumStandbys = Field(0, description="standby replicas per stateful task")
    acceptable_recovery_lag: RecoveryLag = Field(
        10_000, description="lag (offsets) at or below which a copy counts as caught up"
    )
    max_warmup_replicas: WarmupReplicas = Field(
        2, description="warmup replicas allowed at once, cluster-wide (KIP-441 max.warmup.replicas)"
    )
    rack_aware: RackAwareConfig = Field(default_factory=RackAwareConfig)
    scale_down_timeout_seconds: float | None = Field(
        None,
        ge=0,
        description="after this long a leaving pod's actives move even if nobody is caught up; null = never",
    )
    probing_interval_seconds: float = Field(
        600.0, ge=1, description="how long to wait before re-planning while the plan is not stable"
    )
    balance_factor: BalanceFactor = Field(
        1,
        description="loads per unit of capacity may differ by this many tasks (no move just to balance)",
    )
    balance_by: BalanceBy = Field(
        BalanceBy.COUNT,
        description="balance task counts, or task weights (within the largest single weight)",
    )
    catch_up_trigger: CatchUpTrigger = Field(
        CatchUpTrigger.EAGER,
        description="re-plan when any warmup is caught up (eager) or when all of a pod's are (batched)",
    )


class Task(ContractModel):
    id: TaskId
    subtopology: str = Field(min_length=1, description="subtopology the task belongs to")
    stateful: bool = Field(True, description="whether the task has state to restore")
    changelog_offsets: int = Field(
        0, ge=0, description="records in the task's changelogs: the lag of a client with no state"
    )
    input_partition_racks: list[list[str]] = Field(
        default_factory=list,
        description="per input partition, the racks holding a replica; an empty list means unknown",
    )
    weight: float = Field(1.0, gt=0, description="relative processing weight of the task")


class Client(ContractModel):
    id: ClientId
    rack: str | None = Field(
        min_length=1,
        description="zone of the pod's node; null when unknown (rack awareness is then off for this pod)",
    )
    capacity: int = Field(1, ge=1, description="processing threads: load is balanced per unit")
    leaving_since: AwareDatetime | None = Field(
        None, description="when the pod was marked leaving (RFC 3339), or null"
    )
    lags: dict[TaskId, Annotated[int, Field(ge=0)]] = Field(
        default_factory=dict, description="lag per task the client has state for, assigned or not"
    )
    active: list[TaskId] = Field(default_factory=list, description="published active tasks")
    standby: list[TaskId] = Field(default_factory=list, description="published standby tasks")
    warmup: list[TaskId] = Field(default_factory=list, description="published warmup tasks")


class Snapshot(ContractModel):
    """Everything the planner knows about one app at one instant."""

    now: AwareDatetime = Field(description="the planning instant (RFC 3339 with a time zone)")
    config: PlannerConfig = Field(default_factory=PlannerConfig)
    tasks: list[Task]
    clients: list[Client]


class ClientTarget(ContractModel):
    active: list[TaskId] = Field(default_factory=list)
    standby: list[TaskId] = Field(default_factory=list)


class Followup(ContractModel):
    reason: str
    probe_after_seconds: float


class PlanStats(ContractModel):
    cross_rack_cost: int = Field(description="traffic cost of the published actives")
    active_imbalance: float = Field(description="max - min actives per unit of capacity (non-leaving)")
    moved_actives: int = Field(description="actives that change client in this plan")
    warmups: int
    target_cross_rack_cost: int = Field(description="traffic cost of the target's actives")
    target_active_imbalance: float


class RackUnknown(ContractModel):
    """What the plan could not be rack-aware about (KIP-925 turns rack awareness off where racks are unknown;
    here only for what is unknown)."""

    pods: list[ClientId] = Field(default_factory=list, description="pods whose zone is unknown")
    tasks: list[TaskId] = Field(
        default_factory=list, description="tasks with an input partition whose replicas' racks are unknown"
    )


class Plan(ContractModel):
    assignment: dict[ClientId, ClientAssignment]
    target: dict[ClientId, ClientTarget]
    stable: bool
    followup: Followup | None
    stats: PlanStats
    explain: dict[TaskId, str]
    rack_unknown: RackUnknown = Field(default_factory=RackUnknown)
