"""`smoothscale plan`: the planner's JSON contract on the command line.

Bad input exits with status 2 and one line per problem, each naming the field; nothing is written then, so a
script that pipes plans around never picks up half a file.
"""

from __future__ import annotations

import json
import sys
from importlib import resources
from pathlib import Path
from typing import Any

import click
from pydantic import BaseModel, ValidationError

from smoothscale.assignor.models import Client, PlannerConfig, RackAwareConfig, Snapshot, Task
from smoothscale.assignor.planner import plan
from smoothscale.assignor.validation import SnapshotError

EXAMPLES = ("scale-out", "scale-in", "host-swap")
EXIT_BAD_INPUT = 2


def _field_lines(model: type[BaseModel], prefix: str) -> list[str]:
    lines = []
    for name, info in model.model_fields.items():
        alias = info.alias or name
        if isinstance(info.annotation, type) and issubclass(info.annotation, BaseModel):
            continue
        default = (
            "required"
            if info.is_required()
            else f"default {json.dumps(info.get_default(call_default_factory=True), default=str)}"
        )
        lines.append(f"  {prefix}{alias}: {info.description or ''} ({default})")
    return lines


def _fields_help() -> str:
    sections: list[tuple[type[BaseModel], str]] = [
        (Snapshot, ""),
        (PlannerConfig, "config."),
        (RackAwareConfig, "config.rackAware."),
        (Task, "tasks[]."),
        (Client, "clients[]."),
    ]
    text = ["\b", "Snapshot fields (JSON, camelCase):"]
    for model, prefix in sections:
        text.extend(_field_lines(model, prefix))
    return "\n".join(text)


def _location(loc: tuple[int | str, ...]) -> str:
    out = ""
    for part in loc:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out or "snapshot"


def _problems_from_validation(error: ValidationError) -> list[str]:
    return [f"{_location(e['loc'])}: {e['msg']}" for e in error.errors(include_url=False)]


def _read_input(source: str, example: str | None) -> Any:
    if example is not None:
        text = resources.files("smoothscale.cli").joinpath("examples", f"{example}.json").read_text()
    elif source == "-":
        text = sys.stdin.read()
    else:
        text = Path(source).read_text()
    try:
        return json.loads(text)
    except json.JSONDecodeError as error:
        where = f"line {error.lineno}, column {error.colno}"
        raise _BadInput([f"input: not valid JSON ({error.msg} at {where})"]) from None


class _BadInput(Exception):
    def __init__(self, problems: list[str]) -> None:
        super().__init__("\n".join(problems))
        self.problems = problems


@click.command(
    "plan",
    epilog=_fields_help(),
    context_settings={"max_content_width": 120},
)
@click.option(
    "--input",
    "-i",
    "source",
    default="-",
    show_default=True,
    help="snapshot JSON file, or - for standard input",
)
@click.option("--output", "-o", "target", default="-", show_default=True, help="plan JSON file, or -")
@click.option("--example", type=click.Choice(EXAMPLES), help="plan a snapshot shipped with smoothscale")
@click.option("--compact", is_flag=True, help="one-line JSON instead of indented")
def plan_command(source: str, target: str, example: str | None, compact: bool) -> None:
    """Compute a plan (active, standby and warmup placements) from a cluster snapshot.

    The plan holds `assignment` (what may be published now), `target` (the balanced, rack-optimal
    assignment it converges to), `stable`, `followup` (when to probe again), `stats` and a one-line
    `explain` per task.
    """
    try:
        snapshot = Snapshot.model_validate(_read_input(source, example))
        result = plan(snapshot)
    except ValidationError as error:
        _fail(_problems_from_validation(error))
    except (SnapshotError, _BadInput) as error:
        _fail(error.problems)
    except OSError as error:
        _fail([f"input: cannot read {source!r}: {error.strerror}"])
    text = result.model_dump_json(by_alias=True, indent=None if compact else 2) + "\n"
    if target == "-":
        click.echo(text, nl=False)
    else:
        path = Path(target)
        partial = path.with_name(path.name + ".partial")
        partial.write_text(text)
        partial.replace(path)


def _fail(problems: list[str]) -> None:
    click.echo("smoothscale plan: invalid snapshot", err=True)
    for problem in problems:
        click.echo(f"  {problem}", err=True)
    sys.exit(EXIT_BAD_INPUT)
