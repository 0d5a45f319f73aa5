"""Scoring diagnoses against a reader's truth (`truth_scoring`), as `benchmarks/heldout_recall.py` does for
real excerpts: which rows find an incident, which are allowed, which are false; the manifest's checksums."""

from __future__ import annotations

import hashlib
from datetime import datetime
from pathlib import Path

import pytest
import yaml

from smoothscale.pipeline.truth_scoring import FileTruth, figures, load_manifest, matches, score


def row(kind: str, detail: str, ts: str | None, cite: str = "a.log:3", end: str | None = None) -> dict:
    stamp = datetime.fromisoformat(ts) if ts else None
    return {
        "kind": kind,
        "detail": detail,
        "ts": stamp,
        "end_ts": datetime.fromisoformat(end) if end else stamp,
        "group": "g",
        "evidence": [cite],
    }


EXPIRY = {"match": "expir|remov", "at": "2020-01-17 10:24:24", "window_s": 60}


def test_a_row_matches_by_words_and_overlapping_time() -> None:
    assert matches(row("heartbeat-expiration", "m missed its heartbeats", "2020-01-17 10:25:00"), EXPIRY)
    assert not matches(row("heartbeat-expiration", "x", "2020-01-17 10:26:00"), EXPIRY)
    assert not matches(row("fencing", "m was fenced", "2020-01-17 10:24:24"), EXPIRY)
    # A row that spans the incident's time matches however early it starts.
    spanning = row("slow-rebalance", "expired members", "2020-01-17 10:00:00", end="2020-01-17 10:30:00")
    assert matches(spanning, EXPIRY)


def test_no_time_matches_any_row_and_a_row_without_time_only_then() -> None:
    anytime = {"match": "fenc", "at": None, "window_s": None}
    assert matches(row("fencing", "t was fenced", None), anytime)
    assert not matches(row("fencing", "t was fenced", None), {**anytime, "at": "2021-03-11 19:18:51"})


def test_a_zone_matches_in_wall_time_or_in_utc() -> None:
    probing = {"match": "prob", "at": "2022-08-31 12:03:29", "window_s": 60}
    assert matches(row("regular-probing", "", "2022-08-31 03:03:29"), probing, "+09:00")
    assert matches(row("regular-probing", "", "2022-08-31 12:03:29"), probing, "+09:00")
    assert not matches(row("regular-probing", "", "2022-08-31 03:03:29"), probing)


def test_score_counts_found_missed_allowed_and_false_per_file() -> None:
    entries = [
        FileTruth(
            "a.log",
            incidents=(EXPIRY, {"match": "poll", "at": None}),
            allowed=({"match": "slow", "at": None},),
        ),
        FileTruth("b.log", negative=True),
    ]
    rows = [
        row("heartbeat-expiration", "removed", "2020-01-17 10:24:30"),
        row("slow-rebalance", "took 42 s", "2020-01-17 10:24:00"),
        row("leader-change", "the leader changed", "2020-01-17 10:24:00"),
        row("coverage", "not judged", None),
        row("heartbeat-expiration", "removed", "2020-01-17 10:24:30", cite="b.log:1"),
        row("fencing", "elsewhere", None, cite="c.log:1"),
    ]
    a, b = score(entries, rows)
    assert (len(a.found), len(a.missed), [f["kind"] for f in a.false]) == (1, 1, ["leader-change"])
    assert [f["kind"] for f in b.false] == ["heartbeat-expiration"]
    assert figures([a, b]) == {"files": 2, "incidents": 2, "found": 1, "recall": 0.5, "false_diagnoses": 2}


def test_the_manifest_checks_every_excerpt_of_the_set(tmp_path: Path) -> None:
    (tmp_path / "a.log").write_text("line\n")
    (tmp_path / "b.log").write_text("changed\n")
    digest = hashlib.sha256(b"line\n").hexdigest()
    manifest = tmp_path / "manifest.yaml"
    excerpts = {
        "a.log": {"set": "tuned", "source": "s", "sha256": digest, "truth": {"incidents": [EXPIRY]}},
        "b.log": {"set": "heldout", "source": "s", "sha256": digest, "truth": {"negative": True}},
        "c.log": {"set": "heldout", "source": "https://x/1", "sha256": digest, "truth": {}},
    }
    manifest.write_text(yaml.safe_dump({"excerpts": excerpts}))
    [entry] = load_manifest(manifest, tmp_path, "tuned")
    assert (entry.file, entry.incidents) == ("a.log", (EXPIRY,))
    with pytest.raises(
        SystemExit, match=r"b\.log: its sha256 differs[\s\S]*c\.log: missing \(rebuild it from https://x/1"
    ):
        load_manifest(manifest, tmp_path, "heldout")


def test_the_repository_manifest_is_complete() -> None:
    """Every excerpt has a source, the lines taken, a checksum, a set and a truth; a third is held out."""
    path = Path(__file__).resolve().parents[2] / "benchmarks" / "real_logs" / "manifest.yaml"
    excerpts = yaml.safe_load(path.read_text())["excerpts"]
    assert len(excerpts) >= 20
    for name, item in excerpts.items():
        assert {"set", "source", "taken", "sha256", "truth"} <= item.keys(), name
        assert len(item["sha256"]) == 64, name
    held = [name for name, item in excerpts.items() if item["set"] == "heldout"]
    assert len(held) == len(excerpts) // 3
