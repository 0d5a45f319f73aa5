"""`analyze` over a folder of Kafka / Kafka Streams logs, as a table to check by hand: per file its coverage
(lines, recognised, unrecognised rebalance lines, readable share), the diagnoses whose evidence it holds
(kind, time, members) and the generations of the rebalance table (group, generation, start, duration,
leader, members, reason). The last line is one JSON object with the totals.

    python benchmarks/real_logs_table.py FOLDER [--log-date 2026-11-21]

Members are shortened for reading: a Streams thread as `StreamThread-<n>@<process uuid prefix>`, a
Streams client as `client@<process uuid prefix>`.
"""

from __future__ import annotations

import argparse
import json
import re
import shutil
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any

UUID = r"([0-9a-f]{8})-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}"


def short(member: str) -> str:
    thread = re.search(UUID + r"-(StreamThread-\d+)", member)
    if thread:
        return f"{thread.group(2)}@{thread.group(1)}"
    client = re.search(UUID + "$", member)
    return f"client@{client.group(1)}" if client else member


def when(ts: Any) -> str:
    return ts.isoformat(sep=" ", timespec="milliseconds") if ts is not None else "-"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("folder", type=Path)
    parser.add_argument("--log-date", default="1970-01-01", help="date of lines stamped with a time only")
    args = parser.parse_args()
    from smoothscale.pipeline.analyze import AnalyzeInputs, analyze  # noqa: PLC0415 - Spark loads here
    from smoothscale.pipeline.session import build_session  # noqa: PLC0415

    logs = sorted(
        str(p) for p in args.folder.iterdir() if p.is_file() and re.search(r"\.log(\.gz)?$", p.name)
    )
    out = Path(tempfile.mkdtemp(prefix="real-logs-"))
    try:
        spark = build_session("local[2]", "smoothscale-real-logs")
        started = time.perf_counter()
        inputs = AnalyzeInputs(journals=[], logs=logs, out=out, default_date=args.log_date)
        result = analyze(spark, inputs)
        seconds = time.perf_counter() - started
        diagnosed = [r.asDict() for r in result.tables["diagnoses"].orderBy("ts", "kind").collect()]
        table = [r.asDict() for r in result.tables["generations"].orderBy("group", "start").collect()]
        groups_by_file: dict[str, set[str]] = {}
        for row in result.tables["log_incidents"].select("file", "group").distinct().collect():
            groups_by_file.setdefault(Path(row["file"]).name, set()).add(row["group"])
        spark.stop()
    finally:
        shutil.rmtree(out, ignore_errors=True)
    kinds: Counter[str] = Counter()
    for counts in result.inputs:
        name = Path(counts["file"]).name
        print(f"\n== {name}")
        print(
            f"   coverage: {counts['lines']} lines, {counts['timestamped']} log lines, {counts['recognised']}"
            f" recognised, {counts['unrecognised']} rebalance lines unrecognised, {counts['continuation']}"
            f" continuation, {counts['unknown']} unknown; readable {counts['readable']:.0%}"
        )
        mine = [d for d in diagnosed if any(c.rsplit(":", 1)[0] == name for c in d["evidence"] or [])]
        for d in mine:
            kinds[d["kind"]] += 1
            members = ", ".join(short(m) for m in d["members"] or []) or "-"
            print(f"   {d['kind']:<20} {when(d['ts'])}  members: {members}")
            print(f"      {d['detail'][:300]}")
        if not mine:
            print("   (no diagnosis)")
        for g in [g for g in table if g["group"] in groups_by_file.get(name, set())]:
            members = ", ".join(short(m) for m in g["members"] or [])
            print(
                f"   rebalance {g['group']} gen {g['generation']}: {when(g['start'])} -> {when(g['end'])}"
                f" ({g['duration_s']} s), leader {short(g['leader'] or '-')}, {g['member_count']} members"
                f" [{members}], reason: {g['reason'] or '-'}"
            )
    figures = {
        "files": len(logs),
        "lines": sum(f["lines"] for f in result.inputs),
        "recognised_lines": sum(f["recognised"] for f in result.inputs),
        "unrecognised_lines": sum(f["unrecognised"] for f in result.inputs),
        "diagnoses": len(diagnosed),
        "diagnoses_by_kind": dict(sorted(kinds.items())),
        "rebalances": len(table),
        "analyze_s": round(seconds, 1),
    }
    print(json.dumps(figures, sort_keys=True))


if __name__ == "__main__":
    main()
