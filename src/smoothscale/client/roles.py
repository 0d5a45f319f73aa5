"""What a pod must start and stop to go from one assignment to the next: a pure diff, in a safe order.

The order is the point of this module. Every active the pod loses is stopped first, before anything else
happens, so that the pod can acknowledge the generation as soon as possible and the task's next owner may
start; restoring copies (standbys, warmups) are rearranged next; new actives start last, after the state a
promoted standby or warmup holds has been kept rather than dropped and restored again.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

from smoothscale.contract.ordering import natural_key
from smoothscale.contract.publication import ClientAssignment


class Role(StrEnum):
    ACTIVE = "active"
    STANDBY = "standby"
    WARMUP = "warmup"


@dataclass(frozen=True)
class RoleChange:
    """`task` starts (`started`) or stops holding `role` on this pod."""

    task: str
    role: Role
    started: bool


def roles_of(assignment: ClientAssignment) -> dict[str, Role]:
    """Each task the assignment gives the pod, with its role."""
    roles = dict.fromkeys(assignment.warmup, Role.WARMUP)
    roles.update(dict.fromkeys(assignment.standby, Role.STANDBY))
    roles.update(dict.fromkeys(assignment.active, Role.ACTIVE))
    return roles


def role_changes(before: dict[str, Role], after: dict[str, Role]) -> list[RoleChange]:
    """The changes from `before` to `after`: revoked actives, stopped copies, started copies, new actives."""
    stops = [
        RoleChange(task, role, started=False) for task, role in before.items() if after.get(task) != role
    ]
    starts = [
        RoleChange(task, role, started=True) for task, role in after.items() if before.get(task) != role
    ]

    def phase(change: RoleChange) -> int:
        if not change.started:
            return 0 if change.role is Role.ACTIVE else 1
        return 3 if change.role is Role.ACTIVE else 2

    return sorted(stops + starts, key=lambda change: (phase(change), natural_key(change.task)))
