"""The `smoothscale` group imports a sub-command's module only when that sub-command runs: the sandbox's
worker (started for every pod, again after every crash) does not wait for OR-Tools, kopf or Spark."""

from __future__ import annotations

import subprocess
import sys

import click

from smoothscale.cli.main import COMMANDS, cli

HEAVY = ("ortools", "kopf", "pyspark", "smoothscale.assignor.planner", "smoothscale.operator")


def test_every_listed_command_resolves_to_its_click_command() -> None:
    with click.Context(cli) as ctx:
        assert cli.list_commands(ctx) == sorted(COMMANDS)
        for name in COMMANDS:
            command = cli.get_command(ctx, name)
            assert command is not None and command.name == name


def test_the_worker_imports_none_of_the_heavy_modules() -> None:
    probe = (
        "import sys, click\n"
        "from smoothscale.cli.main import cli\n"
        "with click.Context(cli) as ctx: cli.get_command(ctx, 'worker')\n"
        f"print(sorted(m for m in {HEAVY!r} if m in sys.modules))\n"
    )
    shown = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    assert shown.stdout.strip() == "[]", shown.stdout + shown.stderr
