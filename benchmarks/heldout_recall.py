"""Recall and false diagnoses of `analyze` on a folder of logs whose incidents a careful reader listed.

    python benchmarks/heldout_recall.py [FOLDER] [--expected FILE] [--log-date 2026-11-21]
    python benchmarks/heldout_recall.py FOLDER --truth FOLDER/truth.json
    python benchmarks/heldout_recall.py FOLDER --manifest benchmarks/real_logs/manifest.yaml --set heldout

FOLDER defaults to `benchmarks/heldout/`: excerpts written from Kafka's sources for versions and layouts
that the tests' fixtures (`tests/pipeline/kafka_formats/`) do not use, kept apart from them and not used to
tune the parser. FILE (default FOLDER/expected.yaml) maps each log file to the incidents in it: `kind`,
`group` (`*`: any) and `ts` (ISO, UTC). A diagnosis finds an incident when it has its kind and group, starts
within `--tolerance-s` of it and cites a line of its file; every other diagnosis citing a file of the folder
is a false diagnosis. The expectations of another folder (such as excerpts of third-party logs that must
stay out of the repository) can live outside it: pass `--expected`.

Real excerpts are scored against a reader's truth instead (`truth_scoring`): a `truth.json` (`--truth`, or
FOLDER/truth.json when FOLDER has no expected.yaml), or the manifest of the corpus collected from public
threads (`--manifest`, `--set tuned|heldout|all`: only that set's files, each checked against its
checksum).
Files whose truth gives a `log_date` are analysed with it (one `analyze` per date, in one Spark session).

Per file: the incidents found and missed, the false diagnoses; the last line is one JSON object.
"""

from __future__ import annotations

import argparse
import json
import shutil
import tempfile
import time
from datetime import datetime
from pathlib import Path
from typing import Any

import yaml

from smoothscale.pipeline.truth_scoring import (
    IGNORE_KINDS,
    SETS,
    FileTruth,
    figures,
    from_truth_json,
    load_manifest,
    score,
)

HELDOUT = Path(__file__).resolve().parent / "heldout"
NO_DATE = "1970-01-01"


def cited_files(diagnosis: dict[str, Any]) -> set[str]:
    return {cite.rsplit(":", 1)[0] for cite in diagnosis["evidence"] or []}


def finds(diagnosis: dict[str, Any], name: str, incident: dict[str, Any], tolerance_s: float) -> bool:
    at = datetime.fromisoformat(str(incident["ts"])).replace(tzinfo=None)
    return (
        diagnosis["kind"] == incident["kind"]
        and incident["group"] in ("*", diagnosis["group"])
        and diagnosis["ts"] is not None
        and abs((diagnosis["ts"] - at).total_seconds()) <= tolerance_s
        and name in cited_files(diagnosis)
    )


def diagnose(logs_by_date: dict[str, list[str]]) -> tuple[list[dict[str, Any]], float]:
    """Every diagnosis of the logs, each group of files analysed with its date; and the seconds taken."""
    from smoothscale.pipeline.analyze import AnalyzeInputs, analyze  # noqa: PLC0415 - Spark loads here
    from smoothscale.pipeline.session import build_session  # noqa: PLC0415

    spark = build_session("local[2]", "smoothscale-heldout")
    diagnosed: list[dict[str, Any]] = []
    seconds = 0.0
    try:
        for date, logs in sorted(logs_by_date.items()):
            out = Path(tempfile.mkdtemp(prefix="heldout-"))
            try:
                started = time.perf_counter()
                result = analyze(spark, AnalyzeInputs(journals=[], logs=logs, out=out, default_date=date))
                diagnosed += [r.asDict() for r in result.tables["diagnoses"].orderBy("ts", "kind").collect()]
                seconds += time.perf_counter() - started
            finally:
                shutil.rmtree(out, ignore_errors=True)
    finally:
        spark.stop()
    return diagnosed, seconds


def by_kind(args: argparse.Namespace, logs: list[str]) -> dict[str, Any]:
    """Scored against `expected.yaml`: each incident's kind, group and time."""
    expected: dict[str, list[dict[str, Any]]] = yaml.safe_load(
        (args.expected or args.folder / "expected.yaml").read_text()
    )
    diagnosed, seconds = diagnose({args.log_date: logs})
    matched: set[int] = set()
    found = missed = 0
    for name in sorted(Path(log).name for log in logs):
        print(f"\n== {name}")
        for incident in expected.get(name, []):
            hits = [i for i, d in enumerate(diagnosed) if finds(d, name, incident, args.tolerance_s)]
            matched.update(hits)
            found, missed = (found + 1, missed) if hits else (found, missed + 1)
            verdict = "found " if hits else "MISSED"
            print(f"   {verdict} {incident['kind']} {incident['group']} {incident['ts']}")
    false = [d for i, d in enumerate(diagnosed) if i not in matched]
    names = {Path(log).name for log in logs}
    false = [d for d in false if cited_files(d) & names]
    for d in false:
        cites = ", ".join(d["evidence"][:3])
        print(f"   FALSE  {d['kind']} {d['group']} {d['ts']}: {d['detail'][:200]} ({cites})")
    incidents = found + missed
    return {
        "files": len(logs),
        "incidents": incidents,
        "found": found,
        "recall": round(found / incidents, 3) if incidents else None,
        "false_diagnoses": len(false),
        "diagnoses": len(diagnosed),
        "analyze_s": round(seconds, 1),
    }


def by_truth(args: argparse.Namespace, entries: list[FileTruth], ignore_kinds: str) -> dict[str, Any]:
    """Scored against a reader's truth (`truth_scoring`)."""
    logs_by_date: dict[str, list[str]] = {}
    for entry in entries:
        logs_by_date.setdefault(entry.log_date or args.log_date, []).append(str(args.folder / entry.file))
    diagnosed, seconds = diagnose(logs_by_date)
    scores = score(entries, diagnosed, ignore_kinds)
    for result in scores:
        print(f"\n== {result.file}")
        for what in result.found:
            print(f"   found  {what[:160]}")
        for what in result.missed:
            print(f"   MISSED {what[:160]}")
        for d in result.false:
            print(f"   FALSE  {d['kind']} {d['group']} {d['ts']}: {d['detail'][:200]}")
    return {**figures(scores), "diagnoses": len(diagnosed), "analyze_s": round(seconds, 1)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("folder", type=Path, nargs="?", default=HELDOUT)
    parser.add_argument("--expected", type=Path, help="incidents per file (default FOLDER/expected.yaml)")
    parser.add_argument(
        "--truth", type=Path, help="a truth.json of real excerpts (default FOLDER/truth.json)"
    )
    parser.add_argument(
        "--manifest", type=Path, help="the corpus manifest (benchmarks/real_logs/manifest.yaml)"
    )
    parser.add_argument("--set", choices=(*SETS, "all"), default="all", help="the manifest's set to score")
    parser.add_argument("--log-date", default=NO_DATE, help="date of lines stamped with a time only")
    parser.add_argument("--tolerance-s", type=float, default=10.0)
    args = parser.parse_args()
    if not args.folder.is_dir():
        parser.error(f"FOLDER: {args.folder} is not a folder of logs")
    truth = args.truth or (
        args.folder / "truth.json"
        if args.expected is None and not (args.folder / "expected.yaml").exists()
        else None
    )
    if args.manifest:
        figures_ = by_truth(args, load_manifest(args.manifest, args.folder, args.set), IGNORE_KINDS)
    elif truth is not None:
        if not truth.is_file():
            parser.error(f"--truth: {truth} not found (or give --expected / --manifest)")
        entries, ignore_kinds = from_truth_json(json.loads(truth.read_text()))
        figures_ = by_truth(args, [e for e in entries if (args.folder / e.file).is_file()], ignore_kinds)
    else:
        logs = sorted(
            str(p) for p in args.folder.iterdir() if p.is_file() and p.name.endswith((".log", ".gz"))
        )
        figures_ = by_kind(args, logs)
    print(
        json.dumps(
            {"folder": str(args.folder), "set": args.set if args.manifest else None, **figures_},
            sort_keys=True,
        )
    )


if __name__ == "__main__":
    main()
