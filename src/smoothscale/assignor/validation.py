"""Cross-field checks of a snapshot that pydantic's per-field validation cannot express.

Every problem names the field (JSON path, camelCase) and what was expected, so that `smoothscale plan` can
refuse bad input with a message a person can act on. All problems are collected, not just the first.
"""

from collections import Counter
from itertools import chain

from smoothscale.assignor.models import Snapshot


class SnapshotError(ValueError):
    """A snapshot that is well-formed field by field but inconsistent as a whole."""

    def __init__(self, problems: list[str]) -> None:
        super().__init__("invalid snapshot:\n" + "\n".join(f"  - {p}" for p in problems))
        self.problems = problems


def _duplicates(ids: list[str]) -> list[str]:
    return sorted(i for i, n in Counter(ids).items() if n > 1)


def _empty_rack_names(snapshot: Snapshot) -> list[str]:
    """Input partitions naming an empty rack; one pass over every name first, the positions only if any."""
    listed = chain.from_iterable(t.input_partition_racks for t in snapshot.tasks)
    if "" not in set(chain.from_iterable(listed)):
        return []
    return [
        f"tasks[{i}].inputPartitionRacks[{j}]: empty rack name; expected zone names"
        for i, task in enumerate(snapshot.tasks)
        for j, racks in enumerate(task.input_partition_racks)
        if "" in racks
    ]


def snapshot_problems(snapshot: Snapshot) -> list[str]:
    """Every inconsistency, each naming its field; set operations keep this cheap at 50,000 tasks."""
    problems: list[str] = []
    task_ids = [t.id for t in snapshot.tasks]
    known = set(task_ids)
    if len(known) != len(task_ids):
        for dup in _duplicates(task_ids):
            problems.append(f"tasks[].id: task id {dup!r} appears more than once; expected unique ids")
    for dup in _duplicates([c.id for c in snapshot.clients]):
        problems.append(f"clients[].id: client id {dup!r} appears more than once; expected unique ids")
    problems.extend(_empty_rack_names(snapshot))
    for i, client in enumerate(snapshot.clients):
        fields = (
            ("lags", list(client.lags)),
            ("active", client.active),
            ("standby", client.standby),
            ("warmup", client.warmup),
        )
        for name, ids in fields:
            if known.issuperset(ids):
                continue
            for unknown in sorted(set(ids) - known):
                where = f"clients[{i}].lags.{unknown}" if name == "lags" else f"clients[{i}].{name}"
                problems.append(f"{where}: unknown task {unknown!r}; expected one of tasks[].id")
        held = [*client.active, *client.standby, *client.warmup]
        if len(set(held)) != len(held):
            for dup in _duplicates(held):
                problems.append(
                    f"clients[{i}] ({client.id}): task {dup!r} held more than once across active, standby "
                    "and warmup; expected at most one copy per client"
                )
    actives = [task for client in snapshot.clients for task in client.active]
    if len(set(actives)) != len(actives):
        for dup in _duplicates(actives):
            owners = sorted(c.id for c in snapshot.clients if dup in c.active)
            problems.append(
                f"clients[].active: task {dup!r} is active on {', '.join(owners)}; "
                "expected at most one active client per task"
            )
    if snapshot.tasks and all(c.leaving_since is not None for c in snapshot.clients):
        problems.append(
            "clients: no client that is not leaving; expected at least one to place "
            f"{len(snapshot.tasks)} task(s) on"
        )
    return problems


def validate_snapshot(snapshot: Snapshot) -> None:
    problems = snapshot_problems(snapshot)
    if problems:
        raise SnapshotError(problems)
