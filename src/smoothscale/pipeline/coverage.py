"""Whether the logs were read well enough to judge them: a report that found nothing must say "nothing
suspicious" only when it understood the logs, and "could not judge" when it did not.

A log file is judged when most of its lines are in a layout the parser reads (`readable`, from
`log_lines.line_counts`) and the lines it kept because they speak of rebalances were mostly recognised.
Pure functions of the per-file counts, so that the rule is tested without Spark.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

MIN_READABLE = 0.5  # below this share of understood lines, the file's layout is not one the parser reads


@dataclass(frozen=True, slots=True)
class FileCoverage:
    name: str
    lines: int
    recognised: int
    unrecognised: int
    readable: float

    @property
    def problem(self) -> str | None:
        """Why this file cannot be judged, or None."""
        if self.lines == 0:
            return None
        if self.readable < MIN_READABLE:
            return f"only {self.readable:.0%} of its lines are in a layout the parser reads"
        if self.unrecognised > self.recognised:
            return (
                f"{self.unrecognised} of its {self.unrecognised + self.recognised} lines about rebalances"
                " match no known wording"
            )
        return None


def log_files(inputs: Sequence[Mapping[str, Any]]) -> list[FileCoverage]:
    return [
        FileCoverage(
            Path(str(f["file"])).name,
            int(f["lines"]),
            int(f["recognised"]),
            int(f["unrecognised"]),
            float(f["readable"]),
        )
        for f in inputs
        if f.get("kind") == "log"
    ]


def verdict(inputs: Sequence[Mapping[str, Any]], diagnoses: int) -> str:
    """One sentence: what the diagnoses are worth given what was read."""
    files = log_files(inputs)
    problems = [f"{f.name}: {f.problem}" for f in files if f.problem]
    recognised = sum(f.recognised for f in files)
    if diagnoses:
        found = f"{diagnoses} diagnos{'is' if diagnoses == 1 else 'es'} from {recognised} recognised lines"
        return found + (f"; some logs could not be judged ({'; '.join(problems)})" if problems else "")
    if problems:
        return f"Could not judge: {'; '.join(problems)}"
    if files and recognised == 0:
        return "Could not judge: no line of the logs speaks of a rebalance in a wording the parser knows"
    return f"No diagnosis: nothing suspicious found in {recognised} recognised lines"
