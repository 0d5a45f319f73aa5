"""Entry point of the `smoothscale` command: one click group, one sub-command per job.

Each sub-command lives in its own module and is registered here, so that importing the group stays cheap and
a sub-command's heavy dependencies (kopf, Spark) load only when that sub-command runs.
"""

import click

from smoothscale.cli.analyze_command import analyze_command, sweep_command
from smoothscale.cli.crd_command import crd_command
from smoothscale.cli.demo_command import demo_command
from smoothscale.cli.operator_command import operator_command
from smoothscale.cli.ops_drain import drain_command
from smoothscale.cli.ops_explain import explain_command
from smoothscale.cli.ops_scale import scale_command
from smoothscale.cli.ops_status import status_command
from smoothscale.cli.ops_swap import swap_command
from smoothscale.cli.plan_command import plan_command
from smoothscale.cli.simulate_command import simulate_command
from smoothscale.cli.worker_command import worker_command


@click.group()
@click.version_option(package_name="smoothscale")
def cli() -> None:
    """smoothscale: run Kafka-Streams-style apps on Kubernetes without rebalance downtime."""


cli.add_command(analyze_command)
cli.add_command(crd_command)
cli.add_command(demo_command)
cli.add_command(drain_command)
cli.add_command(explain_command)
cli.add_command(operator_command)
cli.add_command(plan_command)
cli.add_command(scale_command)
cli.add_command(simulate_command)
cli.add_command(status_command)
cli.add_command(swap_command)
cli.add_command(sweep_command)
cli.add_command(worker_command)
