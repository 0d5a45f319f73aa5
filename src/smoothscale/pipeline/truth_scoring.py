"""Scoring `analyze`'s diagnoses against a careful reader's list of the incidents in real log excerpts, in
the format of a `truth.json` (one entry per file: `negative`, `incidents`, `allowed`, each incident with a
`match` regular expression searched in the row's kind and detail, a time `at` (until `until`) and a
`window_s` of slack, and an optional UTC offset `tz` of the file's stamps), and the manifest of the corpus
collected for issue 38 (`benchmarks/real_logs/manifest.yaml`: each excerpt's source, the lines taken, its
checksum, its set and its truth).

A diagnosis belongs to a file when it cites one of its lines. A diagnosis matching one of the file's
incidents finds it; one matching an allowed observation is neither found nor false; every other one is a
false diagnosis (in a `negative` file, all of them). Rows of the `ignore_kinds` (coverage notes) count for
nothing.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import yaml

IGNORE_KINDS = "coverage|could.?not.?judge|not.?judged|unjudged"
SETS = ("tuned", "heldout")


@dataclass(frozen=True)
class FileTruth:
    """What a careful reader found in one file."""

    file: str
    incidents: tuple[Mapping[str, Any], ...] = ()
    allowed: tuple[Mapping[str, Any], ...] = ()
    negative: bool = False
    log_date: str | None = None
    tz: str | None = None


@dataclass
class FileScore:
    file: str
    found: list[str] = field(default_factory=list)
    missed: list[str] = field(default_factory=list)
    false: list[dict[str, Any]] = field(default_factory=list)


def from_truth_json(document: Mapping[str, Any]) -> tuple[list[FileTruth], str]:
    """The entries of a `truth.json` and its `ignore_kinds`."""
    entries = [_entry(item["file"], item) for item in document["files"]]
    return entries, str(document.get("ignore_kinds", IGNORE_KINDS))


def _entry(name: str, item: Mapping[str, Any]) -> FileTruth:
    return FileTruth(
        file=name,
        incidents=tuple(item.get("incidents") or ()),
        allowed=tuple(item.get("allowed") or ()),
        negative=bool(item.get("negative", False)),
        log_date=item.get("log_date"),
        tz=item.get("tz"),
    )


def load_manifest(path: Path, folder: Path, wanted: str) -> list[FileTruth]:
    """The manifest's entries of set `wanted` (`tuned`, `heldout` or `all`), each excerpt checked against its
    checksum in `folder`. Raises SystemExit naming every missing or changed file."""
    manifest = yaml.safe_load(path.read_text())
    problems, entries = [], []
    for name, item in manifest["excerpts"].items():
        if wanted != "all" and item["set"] != wanted:
            continue
        excerpt = folder / name
        if not excerpt.is_file():
            problems.append(f"{name}: missing (rebuild it from {item['source']}, lines as `taken` says)")
        elif hashlib.sha256(excerpt.read_bytes()).hexdigest() != item["sha256"]:
            problems.append(f"{name}: its sha256 differs from the manifest's (the excerpt was changed)")
        entries.append(_entry(name, item["truth"]))
    if problems:
        raise SystemExit(f"{path}: excerpts in {folder} do not match:\n  " + "\n  ".join(problems))
    return entries


def _when(text: str | None) -> datetime | None:
    return datetime.fromisoformat(text) if text else None


def _offset(tz: str | None) -> timedelta:
    """A `+09:00` offset as a timedelta (0 when none)."""
    if not tz:
        return timedelta()
    sign = -1 if tz.startswith("-") else 1
    hours, minutes = tz.lstrip("+-").split(":")
    return sign * timedelta(hours=int(hours), minutes=int(minutes))


def matches(row: Mapping[str, Any], expectation: Mapping[str, Any], tz: str | None = None) -> bool:
    """Whether a diagnosis row (kind, detail, ts, end_ts) is the incident or observation `expectation`."""
    if not re.search(expectation["match"], f"{row['kind']} {row['detail']}", re.IGNORECASE):
        return False
    at = _when(expectation.get("at"))
    if at is None:
        return True
    if row["ts"] is None:
        return False
    until = _when(expectation.get("until")) or at
    slack = timedelta(seconds=float(expectation.get("window_s") or 0))
    start, end = row["ts"], row["end_ts"] or row["ts"]
    for shift in {timedelta(), _offset(tz)}:  # local wall time, or converted to UTC
        if start <= until - shift + slack and end >= at - shift - slack:
            return True
    return False


def score(
    entries: Sequence[FileTruth], rows: Iterable[Mapping[str, Any]], ignore_kinds: str = IGNORE_KINDS
) -> list[FileScore]:
    """Per file: its incidents found and missed, and its false diagnoses."""
    by_file: dict[str, list[Mapping[str, Any]]] = {entry.file: [] for entry in entries}
    for row in rows:
        if re.search(ignore_kinds, row["kind"], re.IGNORECASE):
            continue
        for cited in {cite.rsplit(":", 1)[0] for cite in row["evidence"] or []}:
            if cited in by_file:
                by_file[cited].append(row)
    scores = []
    for entry in entries:
        result = FileScore(entry.file)
        mine = by_file[entry.file]
        used: set[int] = set()
        for incident in entry.incidents:
            hits = {i for i, row in enumerate(mine) if matches(row, incident, entry.tz)}
            used |= hits
            (result.found if hits else result.missed).append(str(incident.get("what", incident["match"])))
        for i, row in enumerate(mine):
            allowed = any(matches(row, item, entry.tz) for item in entry.allowed)
            if entry.negative or (i not in used and not allowed):
                result.false.append(dict(row))
        scores.append(result)
    return scores


def figures(scores: Sequence[FileScore]) -> dict[str, Any]:
    found = sum(len(s.found) for s in scores)
    incidents = found + sum(len(s.missed) for s in scores)
    return {
        "files": len(scores),
        "incidents": incidents,
        "found": found,
        "recall": round(found / incidents, 3) if incidents else None,
        "false_diagnoses": sum(len(s.false) for s in scores),
    }
