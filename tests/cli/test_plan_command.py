"""`smoothscale plan` as a user runs it: files and pipes in, a plan out, or exit 2 and a named field."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from smoothscale.assignor.models import Plan
from smoothscale.cli.main import cli

EXAMPLE = {
    "now": "2026-11-21T10:00:00Z",
    "config": {"numStandbys": 1, "maxWarmupReplicas": 1},
    "tasks": [
        {"id": "0_0", "subtopology": "0", "changelogOffsets": 500_000},
        {"id": "0_1", "subtopology": "0", "changelogOffsets": 500_000},
    ],
    "clients": [
        {"id": "orders-0", "rack": "zone-a", "lags": {"0_0": 0, "0_1": 0}, "active": ["0_0", "0_1"]},
        {"id": "orders-1", "rack": "zone-b"},
    ],
}


def run(args: list[str], stdin: str | None = None) -> Any:
    return CliRunner().invoke(cli, ["plan", *args], input=stdin)


def test_file_in_file_out(tmp_path: Path) -> None:
    source, target = tmp_path / "snapshot.json", tmp_path / "plan.json"
    source.write_text(json.dumps(EXAMPLE))
    result = run(["--input", str(source), "--output", str(target)])
    assert result.exit_code == 0, result.output
    plan = Plan.model_validate_json(target.read_text())
    assert plan.assignment["orders-0"].active == ["0_0", "0_1"], "actives stay until orders-1 is caught up"
    assert plan.assignment["orders-1"].standby == ["0_0", "0_1"], "orders-1 restores both as standbys"
    assert plan.target["orders-1"].active, "and will run one of them once caught up"
    assert not plan.stable and plan.followup is not None


def test_stdin_to_stdout_is_camel_case_json() -> None:
    result = run([], stdin=json.dumps(EXAMPLE))
    assert result.exit_code == 0, result.output
    data = json.loads(result.output)
    assert set(data) == {"assignment", "target", "stable", "followup", "stats", "explain", "rackUnknown"}
    assert "probeAfterSeconds" in data["followup"] and "crossRackCost" in data["stats"]


@pytest.mark.parametrize(
    ("mutate", "expected"),
    [
        (lambda d: d["tasks"][0].update(changelogOffsets=-1), "tasks[0].changelogOffsets"),
        (lambda d: d["clients"][1].update(capacity=0), "clients[1].capacity"),
        (lambda d: d["clients"][0]["lags"].update({"0_0": -5}), "clients[0].lags.0_0"),
        (lambda d: d["clients"][1].update(lags={"9_9": 0}), "clients[1].lags.9_9"),
        (lambda d: d["clients"][1].update(standby=["7_7"]), "clients[1].standby"),
        (lambda d: d["clients"][1].update(active=["0_0"]), "clients[].active"),
        (lambda d: d["clients"][0].update(standby=["0_0"]), "clients[0] (orders-0)"),
        (lambda d: d["tasks"].append(dict(d["tasks"][0])), "tasks[].id"),
        (lambda d: d["clients"].append(dict(d["clients"][1])), "clients[].id"),
        (lambda d: d["config"].update(rackAware={"strategy": "fastest"}), "config.rackAware.strategy"),
        (lambda d: d.update(now="yesterday"), "now"),
        (lambda d: d["clients"][1].update(leavingSince="soon"), "clients[1].leavingSince"),
        (lambda d: d["config"].update(maxWarmupReplicas=0), "config.maxWarmupReplicas"),
        (lambda d: d["clients"][0].update(colour="blue"), "clients[0].colour"),
    ],
)
def test_bad_input_exits_2_naming_the_field_and_writes_nothing(
    tmp_path: Path, mutate: Any, expected: str
) -> None:
    data = json.loads(json.dumps(EXAMPLE))
    mutate(data)
    source, target = tmp_path / "snapshot.json", tmp_path / "plan.json"
    source.write_text(json.dumps(data))
    result = run(["--input", str(source), "--output", str(target)])
    assert result.exit_code == 2
    assert expected in result.output, result.output
    assert not target.exists()


def test_malformed_json_is_reported_with_its_position() -> None:
    result = run([], stdin='{"now": ')
    assert result.exit_code == 2
    assert "not valid JSON" in result.output and "line 1" in result.output


def test_missing_file_is_a_clear_error(tmp_path: Path) -> None:
    result = run(["--input", str(tmp_path / "nope.json")])
    assert result.exit_code == 2
    assert "cannot read" in result.output


def test_help_documents_every_snapshot_field() -> None:
    text = run(["--help"]).output
    for field in (
        "now",
        "config.numStandbys",
        "config.acceptableRecoveryLag",
        "config.maxWarmupReplicas",
        "config.scaleDownTimeoutSeconds",
        "config.probingIntervalSeconds",
        "config.rackAware.strategy",
        "config.rackAware.trafficCost",
        "config.rackAware.nonOverlapCost",
        "tasks[].id",
        "tasks[].subtopology",
        "tasks[].stateful",
        "tasks[].changelogOffsets",
        "tasks[].inputPartitionRacks",
        "tasks[].weight",
        "clients[].id",
        "clients[].rack",
        "clients[].capacity",
        "clients[].leavingSince",
        "clients[].lags",
        "clients[].active",
        "clients[].standby",
        "clients[].warmup",
    ):
        assert f"{field}:" in text, field


@pytest.mark.parametrize("example", ["scale-out", "scale-in", "host-swap"])
def test_shipped_examples_plan(example: str) -> None:
    result = run(["--example", example, "--compact"])
    assert result.exit_code == 0, result.output
    plan = Plan.model_validate_json(result.output)
    assert sum(len(a.active) for a in plan.assignment.values()) == 12


def test_console_script_runs_from_a_shell() -> None:
    out = subprocess.run(
        [sys.executable, "-m", "smoothscale.cli", "plan", "--example", "scale-in", "--compact"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert json.loads(out)["assignment"]["orders-3"]["standby"] == []
