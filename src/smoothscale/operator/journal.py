"""The operator's event journal: one JSON object per line, for people reading a rebalance after the fact and
for the analytics pipeline (`smoothscale analyze`).

Every record has `ts` (RFC 3339 UTC with microseconds), `kind`, `namespace`, `app` and `generation` (the
published generation at that moment); the other fields depend on the kind:

- `plan`: `reason` (why it planned), `stable`, `durationSeconds`, `stats` (the plan's stats), `followup`
  (reason and probeAfterSeconds, or null), `warmups` ([{task, pod}]), `clients`, `tasks`;
- `plan-held`: `reason`, `pods` (holders whose metrics are missing), when planning starts to be held for
  them or for other pods;
- `publication`: `reason` (the event reason), `revoking` ({task: {owner, generation}}), `active`,
  `standby`, `warmup` (counts), `moves` ([{task, from, to}] made active on a new pod in this generation);
- `handover`: `task`, `from`, `to`, `step` (`revoked` or `completed`);
- `handover-poll`: `pods` (old owners whose acknowledgment a poll between rounds saw), `polls` (pods polled
  since the last publication); the publication it allowed follows;
- `scrape`: `pods`, `failures` ({pod: reason}), `lagTotal`, `warmupLags` ([{task, pod, lag}]), written as the
  round scrapes, so that `generation` is the one the lags were scraped under (the warmups it lists);
- `scaling`: `step` (`create`, `leaving`, `kept`, `retire`, `restart`, `remove-stopped`, `stamp-leaving`,
  `lost`), `pod`, `reason`;
- `spec`: `valid`, `problems`.

Records go to standard output and, optionally, are appended to a file; a write error never stops the
operator (the journal is evidence, not state).
"""

from __future__ import annotations

import json
import logging
import sys
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, TextIO

from .appref import AppRef

logger = logging.getLogger(__name__)


class Journal:
    def __init__(
        self,
        *,
        stdout: bool = True,
        path: Path | None = None,
        clock: Callable[[], datetime] = lambda: datetime.now(UTC),
    ) -> None:
        self._stdout = stdout
        self._clock = clock
        self._file: TextIO | None = None
        if path is not None:
            path.parent.mkdir(parents=True, exist_ok=True)
            self._file = path.open("a", encoding="utf-8")

    def record(self, kind: str, app: AppRef, generation: int, **fields: Any) -> None:
        entry = {
            "ts": self._clock().astimezone(UTC).isoformat().replace("+00:00", "Z"),
            "kind": kind,
            "namespace": app.namespace,
            "app": app.name,
            "generation": generation,
            **fields,
        }
        line = json.dumps(entry, separators=(",", ":"), default=str)
        try:
            if self._stdout:
                # sys.stdout at the time of writing: kopf's test runner swaps it while it runs.
                print(line, file=sys.stdout, flush=True)
            if self._file is not None:
                self._file.write(line + "\n")
                self._file.flush()
        except (OSError, ValueError) as error:
            logger.warning("journal write failed: %s", error)

    def close(self) -> None:
        if self._file is not None:
            self._file.close()
            self._file = None
