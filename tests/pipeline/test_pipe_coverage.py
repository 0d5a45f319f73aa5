"""The report's verdict: "could not judge" when the logs were not understood, "nothing suspicious" only
when they were, and a warning next to diagnoses drawn from partly understood logs."""

from __future__ import annotations

from typing import Any

from smoothscale.pipeline.coverage import verdict


def log(
    name: str, lines: int, recognised: int, unrecognised: int = 0, readable: float = 1.0
) -> dict[str, Any]:
    return {
        "kind": "log",
        "file": f"file:/logs/{name}",
        "lines": lines,
        "recognised": recognised,
        "unrecognised": unrecognised,
        "readable": readable,
    }


def test_nothing_suspicious_only_in_logs_that_were_read() -> None:
    assert (
        verdict([log("a.log", 100, 12)], 0) == "No diagnosis: nothing suspicious found in 12 recognised lines"
    )


def test_an_unread_layout_cannot_be_judged() -> None:
    said = verdict([log("a.log", 100, 12), log("syslog.log", 689, 0, readable=0.2)], 0)
    assert said == "Could not judge: syslog.log: only 20% of its lines are in a layout the parser reads"


def test_unrecognised_rebalance_lines_cannot_be_judged() -> None:
    said = verdict([log("a.log", 100, 3, unrecognised=9)], 0)
    assert said == "Could not judge: a.log: 9 of its 12 lines about rebalances match no known wording"


def test_logs_without_any_rebalance_line_cannot_be_judged() -> None:
    assert verdict([log("a.log", 100, 0)], 0).startswith("Could not judge: no line of the logs")


def test_diagnoses_carry_a_warning_when_some_logs_were_not_read() -> None:
    said = verdict([log("a.log", 100, 12), log("b.log", 50, 0, readable=0.1)], 2)
    assert said.startswith("2 diagnoses from 12 recognised lines; some logs could not be judged (b.log: ")


def test_journals_do_not_count_as_logs() -> None:
    journal = {"kind": "journal", "file": "j.jsonl", "lines": 10, "malformed": 0}
    assert verdict([journal], 0) == "No diagnosis: nothing suspicious found in 0 recognised lines"
