"""Entry point of the `smoothscale` command: one click group, one sub-command per job."""

import click


@click.group()
@click.version_option(package_name="smoothscale")
def cli() -> None:
    """smoothscale: run Kafka-Streams-style apps on Kubernetes without rebalance downtime."""
