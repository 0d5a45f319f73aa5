"""ETA benchmark: how close the operator's estimated completion time of a migration comes to its actual end.

A migration runs from the round that first finds tasks to move (warmups restoring, moves queued behind the
warmup cap, hand-overs) to the first round that finds none left. At the rounds where its progress (records
restored / records restored and left) first reaches 10 %, 50 % and 90 %, the ETA the round estimated
(`control.progress`) is compared with the actual end, as a share of the migration's duration:
`|ETA - end| / (end - start)`; the error against the time then still left, `|ETA - end| / (end - t)`, is
printed beside it. Goals: within 20 % at 10 % progress, within 10 % at 50 %.

Two sources:
- the simulator, every scenario of the library (`examples/scenarios`) under smoothscale, the operator's own
  round with its estimate, every migration of each;
- `--demo kafka`: `smoothscale demo --kafka --history 1000000 --json` (three real brokers, the Java sample
  app on Kafka Streams, its changelogs filled first: `KAFKA_HISTORY`), whose steps record each status the
  operator wrote (`status.progress`) once a second.

Prints a line per migration and the worst and median errors; the last line is one JSON object of figures,
units in the keys.

    python benchmarks/eta_bench.py                  # the simulator's library
    python benchmarks/eta_bench.py --demo kafka     # and the demo on real Kafka Streams (minutes)
    python benchmarks/eta_bench.py --demo kafka --history 300000   # smaller stores, a shorter run
    python benchmarks/eta_bench.py --demo worker    # and the demo's sample workers (a minute and a half)
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from smoothscale.cli.simulate_command import load_scenario
from smoothscale.simulation.engine import EPOCH, Simulation

LIBRARY = Path(__file__).resolve().parents[1] / "examples" / "scenarios"
MARKS = (10, 50, 90)
"""Progress (percent of the records to restore) at which the ETA is read."""
GOALS = {10: 20.0, 50: 10.0}
"""The error allowed at a mark, in percent of the migration's duration."""
KAFKA_HISTORY = 1_000_000
"""Records in each partition of the sample app's changelogs before the Kafka demo starts (`--history`):
Kafka Streams restores its minutes of orders within a round, before any rate is measured, so its
migrations would show no ETA to judge. With 300,000 a warmup restores in two or three of the demo's
one-second rounds, too few to measure it by; with 1,000,000 it restores over six or seven."""


@dataclass(frozen=True)
class Migration:
    source: str
    start: float
    end: float
    records: int
    eta_at: dict[int, tuple[float, float] | None]
    """Per mark: (when the mark was reached, the ETA then), seconds; None: never reached with an ETA."""
    excluded: str | None = None
    """Why the goal figures leave it out (the user changed the app again, the operator restarted)."""

    def errors(self, mark: int) -> tuple[float, float] | None:
        """The ETA's error at a mark, in percent of the migration's duration and of the time still left."""
        seen = self.eta_at.get(mark)
        if seen is None:
            return None
        at, eta = seen
        off = abs(eta - self.end)
        return 100 * off / (self.end - self.start), 100 * off / max(self.end - at, 1e-9)


def migrations(
    source: str, samples: Sequence[tuple[float, float, float | None, float, int]]
) -> list[Migration]:
    """Migrations from per-round samples (time, percent, ETA or None, start, records in all) followed by
    the end of each: a sample of start -1 (no migration left)."""
    found: list[Migration] = []
    current: list[tuple[float, float, float | None, float, int]] = []
    for sample in samples:
        if current and sample[3] != current[0][3]:
            if sample[3] < 0:
                found.append(_migration(source, current, sample[0]))
            else:  # a new migration without an end of the last: the operator restarted
                found.append(_migration(source, current, sample[0], "the operator restarted during it"))
            current = []
        if sample[3] >= 0:
            current.append(sample)
    return found


def _migration(
    source: str,
    samples: list[tuple[float, float, float | None, float, int]],
    end: float,
    excluded: str | None = None,
) -> Migration:
    eta_at: dict[int, tuple[float, float] | None] = {}
    for mark in MARKS:
        reached = next(
            ((t, eta) for t, pct, eta, _, records in samples if records and pct >= mark and eta is not None),
            None,
        )
        eta_at[mark] = reached
    return Migration(source, samples[0][3], end, max(s[4] for s in samples), eta_at, excluded)


def simulated(path: Path) -> list[Migration]:
    """Every migration of one library scenario under smoothscale (seed 0), its end the round that found no
    work left (or the end of the run, which stops once balanced)."""
    scenario = load_scenario(path)
    simulation = Simulation(scenario, "smoothscale", 0, check_invariants=False)
    result = simulation.run()
    samples = [
        (t, p.percent, _seconds(p.eta), _seconds(p.started), p.records_restored + p.records_left)
        if p is not None
        else (t, 100.0, None, -1.0, 0)
        for t, p in simulation.operator.progress
    ]
    if samples and samples[-1][3] >= 0:
        samples.append((result.end_seconds, 100.0, None, -1.0, 0))
    found = migrations(path.stem, samples)
    events = [event.at for event in scenario.events]
    return [
        m
        if m.excluded or not any(m.start < at <= m.end for at in events)
        else Migration(
            m.source, m.start, m.end, m.records, m.eta_at, "the scenario changed the app during it"
        )
        for m in found
        if m.records > 0
    ]


def _seconds(moment: Any) -> float | None:
    return None if moment is None else (moment - EPOCH).total_seconds()


def demo(kind: str, output: Path | None, history: int = KAFKA_HISTORY) -> list[Migration]:
    """The migrations of `smoothscale demo --json` (`kafka`: `--kafka`, on real Kafka Streams; `worker`: the
    sample workers), one per step that moved tasks, from the progress its status showed once a second
    (`report.step_figures`: `migrations`); `output` keeps the demo's folder (its PNG timeline marks each
    migration's first ETA beside its end)."""
    command = [sys.executable, "-m", "smoothscale.cli", "demo", "--json"]
    command += ["--kafka", "--history", str(history)] if kind == "kafka" else []
    command += ["--output-dir", str(output / kind)] if output is not None else []
    run = subprocess.run(command, capture_output=True, text=True, timeout=1800, check=False)
    if run.returncode not in (0, 1):
        raise SystemExit(f"the demo failed ({run.returncode}): {run.stderr[-2000:]}")
    figures = json.loads(run.stdout.strip().splitlines()[-1])
    found = []
    for step, values in figures["steps"].items():
        for seen in values.get("migrations") or []:
            if seen["end"] is None:
                continue
            samples = [(t, pct, eta, seen["start"], seen["records"]) for t, pct, eta in seen["samples"]]
            samples.append((seen["end"], 100.0, None, -1.0, 0))
            found += [m for m in migrations(f"demo {kind}: {step}", samples) if m.records > 0]
    return found


def _fmt(errors: tuple[float, float] | None) -> str:
    return "-" if errors is None else f"{errors[0]:5.1f}% ({errors[1]:5.1f}%)"


def summary(found: Sequence[Migration]) -> dict[str, Any]:
    """Worst and median error per mark over the migrations the goals count, and whether each goal holds."""
    counted = [m for m in found if m.excluded is None]
    out: dict[str, Any] = {"migrations": len(counted), "excluded": len(found) - len(counted)}
    for mark in MARKS:
        errors = [e[0] for m in counted if (e := m.errors(mark)) is not None]
        left = [e[1] for m in counted if (e := m.errors(mark)) is not None]
        out[f"at_{mark}pct_worst_error_pct"] = round(max(errors), 1) if errors else None
        out[f"at_{mark}pct_median_error_pct"] = round(statistics.median(errors), 1) if errors else None
        out[f"at_{mark}pct_median_error_of_time_left_pct"] = (
            round(statistics.median(left), 1) if left else None
        )
        if mark in GOALS:
            out[f"at_{mark}pct_goal_met"] = bool(errors) and max(errors) <= GOALS[mark]
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--demo", choices=("kafka", "worker"), action="append", default=[])
    parser.add_argument("--output-dir", type=Path, help="keep each demo's folder (its PNG timeline) here")
    parser.add_argument(
        "--history",
        type=int,
        default=KAFKA_HISTORY,
        help=f"records per changelog partition of the Kafka demo's app (default {KAFKA_HISTORY:,})",
    )
    args = parser.parse_args()
    found: dict[str, list[Migration]] = {"simulator": []}
    for path in sorted(LIBRARY.glob("*.yaml")):
        found["simulator"] += simulated(path)
    for kind in args.demo:
        found[f"demo_{kind}"] = demo(kind, args.output_dir, args.history)
    header = f"{'migration':<44} {'s':>7} {'records':>11}   " + "   ".join(
        f"ETA error at {m}%" for m in MARKS
    )
    print("error: |ETA - actual end| in percent of the migration's duration (of the time then left)")
    print(header)
    for migrations_of in found.values():
        for m in migrations_of:
            line = f"{m.source:<44} {m.end - m.start:7.1f} {m.records:11d}   "
            line += "   ".join(f"{_fmt(m.errors(mark)):>17}" for mark in MARKS)
            print(line + (f"   (not counted: {m.excluded})" if m.excluded else ""))
    figures = {source: summary(migrations_of) for source, migrations_of in found.items()}
    print(json.dumps(figures, sort_keys=True))


if __name__ == "__main__":
    main()
