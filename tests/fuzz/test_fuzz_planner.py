"""`smoothscale plan` on fuzzed snapshots: a valid one gives a plan obeying every rule of Contract 1 (judged
by the suite's oracle `check_plan`), in any order of tasks and clients; a broken one exits 2 naming the
broken field, and writes no plan."""

from __future__ import annotations

import json
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from click.testing import CliRunner
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from rules import check_plan
from strategies import clusters

from smoothscale.assignor.models import Plan, Snapshot
from smoothscale.cli.main import cli

FUZZ = settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def _plan(snapshot_json: str) -> tuple[int, str, str | None]:
    """Run the CLI as a user does, from a file to a file: its exit code, its output, and the plan file's
    text (None when it wrote none)."""
    with tempfile.TemporaryDirectory(prefix="fuzz-plan-") as directory:
        source, target = Path(directory) / "snapshot.json", Path(directory) / "plan.json"
        source.write_text(snapshot_json)
        result = CliRunner().invoke(cli, ["plan", "--input", str(source), "--output", str(target)])
        return result.exit_code, result.output, target.read_text() if target.exists() else None


@given(clusters(), st.randoms(use_true_random=False))
@FUZZ
def test_a_valid_snapshot_in_any_order_plans_by_every_rule(snapshot: Snapshot, shuffler: Any) -> None:
    data = json.loads(snapshot.model_dump_json(by_alias=True))
    shuffler.shuffle(data["tasks"])
    shuffler.shuffle(data["clients"])
    code, output, written = _plan(json.dumps(data))
    assert code == 0 and written is not None, output
    plan = Plan.model_validate_json(written)
    assert check_plan(snapshot, plan) == []


def _fields(node: Any, path: str = "") -> Iterator[tuple[str, Any, Any, str | int]]:
    """(CLI name, parent, value, key) of every value below the root, named as the CLI names them:
    `tasks[0].inputPartitionRacks[1][0]`, `clients[2].lags.0_3`."""
    items = node.items() if isinstance(node, dict) else enumerate(node) if isinstance(node, list) else ()
    for key, value in items:
        name = f"{path}[{key}]" if isinstance(key, int) else f"{path}.{key}" if path else key
        yield name, node, value, key
        yield from _fields(value, name)


def _wrong_type(value: Any) -> Any:
    """A value no field of the snapshot accepts where `value` stood: a list where a map was, else a map."""
    return [1] if isinstance(value, dict) else {"fuzz": []}


@given(clusters(max_subtopologies=2, max_partitions=4, max_clients=4), st.data())
@FUZZ
def test_a_field_of_the_wrong_type_exits_2_naming_it_and_writes_nothing(
    snapshot: Snapshot, data: st.DataObject
) -> None:
    document = json.loads(snapshot.model_dump_json(by_alias=True))
    name, parent, value, key = data.draw(st.sampled_from(list(_fields(document))), label="field")
    parent[key] = _wrong_type(value)
    code, output, written = _plan(json.dumps(document))
    assert code == 2, output
    assert name in output, output
    assert written is None


@given(clusters(max_subtopologies=2, max_partitions=4, max_clients=4), st.data())
@FUZZ
def test_an_unknown_or_missing_field_exits_2_naming_it(snapshot: Snapshot, data: st.DataObject) -> None:
    document = json.loads(snapshot.model_dump_json(by_alias=True))
    objects = [
        (name, value)
        for name, _, value, key in _fields(document)
        if isinstance(value, dict) and key != "lags"  # lags' keys are task ids, not fields
    ]
    name, target_object = data.draw(st.sampled_from([("", document), *objects]), label="object")
    required = [key for key in ("id", "now", "tasks", "clients", "subtopology") if key in target_object]
    if required and data.draw(st.booleans(), label="drop a required field"):
        key = data.draw(st.sampled_from(required))
        del target_object[key]
    else:
        key = data.draw(st.text("abcdefghijklmnopqrstuvwxyz", min_size=1, max_size=12), label="unknown")
        if key in target_object:
            return
        target_object[key] = 1
    code, output, written = _plan(json.dumps(document))
    assert code == 2, output
    assert (f"{name}.{key}" if name else key) in output, output
    assert written is None
