"""Entry point of the `smoothscale` command: one click group, one sub-command per job.

Each sub-command lives in its own module, imported only when that sub-command runs (click's lazily loaded
sub-commands): `smoothscale worker`, which the sandbox starts for every pod and again after every crash, and
`smoothscale status`, which a person runs during an incident, start in a tenth of the time the whole CLI
takes to import (OR-Tools, kopf, Spark's launcher), and a crashed pod's tasks wait that much less.
"""

import importlib
from collections.abc import Mapping
from typing import Any

import click

COMMANDS = {
    "analyze": "smoothscale.cli.analyze_command:analyze_command",
    "crd": "smoothscale.cli.crd_command:crd_command",
    "demo": "smoothscale.cli.demo_command:demo_command",
    "drain": "smoothscale.cli.ops_drain:drain_command",
    "explain": "smoothscale.cli.ops_explain:explain_command",
    "operator": "smoothscale.cli.operator_command:operator_command",
    "plan": "smoothscale.cli.plan_command:plan_command",
    "scale": "smoothscale.cli.ops_scale:scale_command",
    "simulate": "smoothscale.cli.simulate_command:simulate_command",
    "status": "smoothscale.cli.ops_status:status_command",
    "swap": "smoothscale.cli.ops_swap:swap_command",
    "sweep": "smoothscale.cli.analyze_command:sweep_command",
    "worker": "smoothscale.cli.worker_command:worker_command",
}
"""Each sub-command's name and where it is defined (`module:attribute`)."""


class LazyGroup(click.Group):
    """A group whose sub-commands are imported when looked up (`--help` looks up every one)."""

    def __init__(self, *args: Any, lazy: Mapping[str, str], **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.lazy = dict(lazy)

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted({*super().list_commands(ctx), *self.lazy})

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        if cmd_name not in self.lazy:
            return super().get_command(ctx, cmd_name)
        module, attribute = self.lazy[cmd_name].split(":")
        command = getattr(importlib.import_module(module), attribute)
        if not isinstance(command, click.Command) or command.name != cmd_name:
            raise TypeError(f"{self.lazy[cmd_name]} is not the click command {cmd_name!r}")
        return command


@click.group(cls=LazyGroup, lazy=COMMANDS)
@click.version_option(package_name="smoothscale")
def cli() -> None:
    """smoothscale: run Kafka-Streams-style apps on Kubernetes without rebalance downtime."""
