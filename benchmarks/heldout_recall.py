"""Recall and false diagnoses of `analyze` on a folder of logs whose incidents a careful reader listed.

    python benchmarks/heldout_recall.py [FOLDER] [--expected FILE] [--log-date 2026-11-21]

FOLDER defaults to `benchmarks/heldout/`: excerpts written from Kafka's sources for versions and layouts
that the tests' fixtures (`tests/pipeline/kafka_formats/`) do not use, kept apart from them and not used to
tune the parser. FILE (default FOLDER/expected.yaml) maps each log file to the incidents in it: `kind`,
`group` (`*`: any) and `ts` (ISO, UTC). A diagnosis finds an incident when it has its kind and group, starts
within `--tolerance-s` of it and cites a line of its file; every other diagnosis citing a file of the folder
is a false diagnosis. The expectations of another folder (such as excerpts of third-party logs that must
stay out of the repository) can live outside it: pass `--expected`.

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

HELDOUT = Path(__file__).resolve().parent / "heldout"


def cited_files(diagnosis: dict[str, Any]) -> set[str]:
    return {cite.rsplit(":", 1)[0] for cite in diagnosis["evidence"] or []}


def finds(diagnosis: dict[str, Any], name: str, incident: dict[str, Any], tolerance_s: float) -> bool:
    at = datetime.fromisoformat(str(incident["ts"])).replace(tzinfo=None)
    return (
        diagnosis["kind"] == incident["kind"]
        and incident["group"] in ("*", diagnosis["group"])
        and abs((diagnosis["ts"] - at).total_seconds()) <= tolerance_s
        and name in cited_files(diagnosis)
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("folder", type=Path, nargs="?", default=HELDOUT)
    parser.add_argument("--expected", type=Path, help="incidents per file (default FOLDER/expected.yaml)")
    parser.add_argument("--log-date", default="1970-01-01", help="date of lines stamped with a time only")
    parser.add_argument("--tolerance-s", type=float, default=10.0)
    args = parser.parse_args()
    expected: dict[str, list[dict[str, Any]]] = yaml.safe_load(
        (args.expected or args.folder / "expected.yaml").read_text()
    )
    from smoothscale.pipeline.analyze import AnalyzeInputs, analyze  # noqa: PLC0415 - Spark loads here
    from smoothscale.pipeline.session import build_session  # noqa: PLC0415

    logs = sorted(str(p) for p in args.folder.iterdir() if p.is_file() and p.name.endswith((".log", ".gz")))
    out = Path(tempfile.mkdtemp(prefix="heldout-"))
    try:
        spark = build_session("local[2]", "smoothscale-heldout")
        started = time.perf_counter()
        result = analyze(spark, AnalyzeInputs(journals=[], logs=logs, out=out, default_date=args.log_date))
        diagnosed = [r.asDict() for r in result.tables["diagnoses"].orderBy("ts", "kind").collect()]
        seconds = time.perf_counter() - started
        spark.stop()
    finally:
        shutil.rmtree(out, ignore_errors=True)
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
    figures = {
        "folder": str(args.folder),
        "files": len(logs),
        "incidents": incidents,
        "found": found,
        "recall": round(found / incidents, 3) if incidents else None,
        "false_diagnoses": len(false),
        "diagnoses": len(diagnosed),
        "analyze_s": round(seconds, 1),
    }
    print(json.dumps(figures, sort_keys=True))


if __name__ == "__main__":
    main()
