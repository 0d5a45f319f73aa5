"""Synthetic Kafka / Kafka Streams logs and operator journals with known incidents, for the tests and the
benchmark: every line is written in a format the rebalancing guide (seed 003) quotes, at a time and with
members chosen by the caller, so that what `analyze` finds can be checked against what was written.

`LogWriter` keeps each file's lines in time order and tells where a line ended up (file, line number), so
tests can assert the citations. `scale_out_journal` emits the journal records of a scale-out with warmups
restoring at a known rate through a `record` callable, so that the records themselves are written by the
operator's own `Journal` (the pipeline does not import the operator).
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any, Protocol


def process_id(app: str, node: int) -> str:
    """A stable process UUID per (app, node), as a Streams client generates one per process."""
    return str(uuid.uuid5(uuid.NAMESPACE_DNS, f"{app}/{node}"))


def thread(app: str, node: int, index: int) -> str:
    return f"{app}-{process_id(app, node)}-StreamThread-{index}-consumer"


def member_id(app: str, node: int, index: int) -> str:
    return f"{thread(app, node, index)}-{uuid.uuid5(uuid.NAMESPACE_DNS, thread(app, node, index))}"


def stamp(ts: datetime) -> str:
    return f"[{ts:%Y-%m-%d %H:%M:%S},{ts.microsecond // 1000:03d}]"


def _client(app: str, node: int, index: int) -> str:
    return f"[Consumer clientId={thread(app, node, index)}, groupId={app}]"


# -- the lines, as the guide quotes them ------------------------------------------------------------------


def participating(app: str, leader: tuple[int, int], members: dict[int, Sequence[int]]) -> list[str]:
    """The leader's assignor line and one line per node listing its consumers (Kafka 3.6's format)."""
    consumers = sum(len(threads) for threads in members.values())
    head = (
        f"INFO stream-thread [{thread(app, *leader)}] {len(members)} client nodes and {consumers} consumers"
        " participating in this rebalance: "
    )
    listed = [
        f"{process_id(app, node)}: [{', '.join(member_id(app, node, t) for t in threads)}]"
        for node, threads in sorted(members.items())
    ]
    return [head, *listed]


def preparing(app: str, old_generation: int, reason: str) -> str:
    return (
        f"INFO [GroupCoordinator 1]: Preparing to rebalance group {app} in state PreparingRebalance with old"
        f" generation {old_generation} (__consumer_offsets-7) (reason: {reason})"
    )


def stabilized(app: str, generation: int, members: int) -> str:
    return (
        f"INFO [GroupCoordinator 1]: Stabilized group {app} generation {generation} (__consumer_offsets-7)"
        f" with {members} members (kafka.coordinator.group.GroupCoordinator)"
    )


def sync_failed(app: str, node: int, index: int, generation: int) -> str:
    return (
        f"INFO {_client(app, node, index)} SyncGroup failed: The group began another rebalance."
        f" Need to re-join the group. Sent generation was Generation{{generationId={generation},"
        f" memberId='{member_id(app, node, index)}', protocol='stream'}}"
        " (org.apache.kafka.clients.consumer.internals.ConsumerCoordinator:826)"
    )


def join_request(app: str, node: int, index: int, reason: str) -> str:
    return f"INFO {_client(app, node, index)} Request joining group due to: {reason}"


def heartbeat_expired(app: str, node: int, index: int) -> str:
    return (
        f"INFO [GroupCoordinator 1]: Member {member_id(app, node, index)} in group {app} has failed,"
        " removing it from the group (kafka.coordinator.group.GroupCoordinator)"
    )


def poll_timeout(app: str, node: int, index: int) -> str:
    return (
        f"WARN {_client(app, node, index)} Member {member_id(app, node, index)} sending LeaveGroup request to"
        " coordinator due to consumer poll timeout has expired."
    )


def probing_scheduled(app: str, leader: tuple[int, int], at_ms: int) -> str:
    return (
        f"INFO stream-thread [{thread(app, *leader)}] Requesting followup rebalance be scheduled by"
        f" {thread(app, *leader)} for {at_ms} to probe for caught-up replica tasks."
    )


def followup_triggered(app: str, node: int, index: int, at_ms: int) -> str:
    name = thread(app, node, index).removesuffix("-consumer")
    return f"INFO stream-thread [{name}] Triggering the followup rebalance scheduled for {at_ms}"


def thread_replaced(app: str, node: int, index: int) -> str:
    name = thread(app, node, index).removesuffix("-consumer")
    return f"ERROR stream-thread [{name}] Replacing thread in the streams uncaught exception handler"


def noise(app: str, node: int, index: int, n: int) -> str:
    """An ordinary processing line no pattern recognises."""
    name = thread(app, node, index).removesuffix("-consumer")
    return (
        f"INFO stream-thread [{name}] Processed {n} total records, ran 0 punctuators, and committed 3 tasks"
    )


# -- files ------------------------------------------------------------------------------------------------


@dataclass
class LogWriter:
    """Lines per file, kept with their times; `write` sorts each file by time (stable) and numbers them."""

    folder: Path
    _lines: dict[str, list[tuple[datetime, int, str]]] = field(default_factory=dict)
    _counter: int = 0

    def add(self, file: str, ts: datetime | None, *texts: str) -> int:
        """Append lines (the first one stamped with `ts`, continuation lines bare); returns a handle for
        `where`."""
        handle = self._counter
        for offset, text in enumerate(texts):
            stamped = text if ts is None or offset > 0 else f"{stamp(ts)} {text}"
            when = ts if ts is not None else datetime.min
            self._lines.setdefault(file, []).append((when, handle + offset, stamped))
        self._counter += len(texts)
        return handle

    def write(self) -> dict[int, str]:
        """Write every file; returns handle -> "file:line" of the first line of each `add`."""
        self.folder.mkdir(parents=True, exist_ok=True)
        where: dict[int, str] = {}
        for file, entries in self._lines.items():
            entries.sort(key=lambda entry: (entry[0], entry[1]))
            with (self.folder / file).open("w", encoding="utf-8") as out:
                for number, (_, handle, text) in enumerate(entries, start=1):
                    where[handle] = f"{file}:{number}"
                    out.write(text + "\n")
        return where


# -- a journal --------------------------------------------------------------------------------------------


class Record(Protocol):
    """Writes one journal record at `ts` (the operator's `Journal.record` behind a settable clock)."""

    def __call__(self, ts: datetime, kind: str, generation: int, **fields: Any) -> None: ...


@dataclass(frozen=True)
class ScaleOut:
    """A scale-out from `pods_before` to `pods_after` pods: every warmup restores `changelog_records` at
    `restore_rate` records/s, sampled every `scrape_seconds`; warmups run `max_warmups` at a time."""

    start: datetime
    pods_before: int = 3
    pods_after: int = 6
    warmups: int = 4
    max_warmups: int = 2
    changelog_records: int = 600_000
    restore_rate: float = 20_000.0
    scrape_seconds: float = 5.0
    app: str = "orders"


def scale_out_journal(scenario: ScaleOut, record: Record) -> datetime:
    """The records of `scenario`, in time order; returns when the app was balanced again."""
    app, now, generation = scenario.app, scenario.start, 1
    for ordinal in range(scenario.pods_before, scenario.pods_after):
        record(now, "scaling", generation, step="create", pod=f"{app}-{ordinal}", reason="ScaleUp")
    now += timedelta(seconds=5)
    pending = [(f"0_{i}", f"{app}-{scenario.pods_before + i % (scenario.pods_after - scenario.pods_before)}")
               for i in range(scenario.warmups)]  # fmt: skip
    while pending:
        batch, pending = pending[: scenario.max_warmups], pending[scenario.max_warmups :]
        warmups = [{"task": task, "pod": pod} for task, pod in batch]
        _plan(record, now, generation, stable=False, warmups=warmups, reason="Probe")
        generation += 1
        record(now, "publication", generation, reason="WarmupsPlaced", revoking={}, active=12, standby=0,
               warmup=len(batch), moves=[])  # fmt: skip
        restore_seconds = scenario.changelog_records / scenario.restore_rate
        elapsed = 0.0
        while elapsed <= restore_seconds:
            lag = max(0.0, scenario.changelog_records - scenario.restore_rate * elapsed)
            lags = [{"task": task, "pod": pod, "lag": lag} for task, pod in batch]
            record(now + timedelta(seconds=elapsed), "scrape", generation, pods=scenario.pods_after,
                   failures={}, lagTotal=lag * len(batch), warmupLags=lags)  # fmt: skip
            elapsed += scenario.scrape_seconds
        now += timedelta(seconds=elapsed)
        for task, pod in batch:
            record(now, "handover", generation, task=task, step="revoked", **{"from": f"{app}-0", "to": pod})
            record(
                now,
                "handover",
                generation + 1,
                task=task,
                step="completed",
                **{"from": f"{app}-0", "to": pod},
            )
        generation += 1
        now += timedelta(seconds=1)
    _plan(record, now, generation, stable=True, warmups=[], reason="WarmupCaughtUp")
    return now


def _plan(record: Callable[..., None], ts: datetime, generation: int, *, stable: bool, warmups: list[Any],
          reason: str) -> None:  # fmt: skip
    followup = None if stable else {"reason": "WarmupsRestoring", "probeAfterSeconds": 60.0}
    stats = {"crossRackCost": 4 if warmups else 2, "targetCrossRackCost": 2, "activeImbalance": 1.0,
             "movedActives": len(warmups), "warmups": len(warmups)}  # fmt: skip
    record(ts, "plan", generation, reason=reason, stable=stable, durationSeconds=0.05, stats=stats,
           followup=followup, warmups=warmups, clients=6, tasks=12)  # fmt: skip
