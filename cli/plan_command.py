"""`smoothscale plan`: the planner's JSON contract on the command line."""

import click


@click.command("plan")
def plan_command() -> None:
    """Compute a plan from a cluster snapshot (work in progress)."""
    raise click.ClickException("not implemented yet")
