"""The operator, wired: one registry of thin handlers over one context, and the entry that runs it."""

from __future__ import annotations

import asyncio
import random

import kopf
import uvloop

from .config import OperatorConfig
from .context import OperatorContext
from .handlers import apps, lifecycle, nodes, pods


def build_registry(context: OperatorContext) -> kopf.OperatorRegistry:
    """Every handler of the operator, over `context`; also what tests hand to `KopfRunner`."""
    registry = kopf.OperatorRegistry()
    for module in (lifecycle, nodes, pods, apps):
        module.register(registry, context)
    return registry


def run(config: OperatorConfig, *, liveness_endpoint: str | None = None) -> None:
    """Run until SIGTERM/SIGINT (kopf handles the signals and the graceful stop).

    On uvloop, as kopf's own CLI runs when it is installed: the event loop's own work (callbacks, timers,
    socket reads and writes) is a good part of a steady operator's CPU (a round per app and a scrape per pod
    every scrape interval), and uvloop does it in C."""
    context = OperatorContext(config)
    # kopf makes peering mandatory as soon as a peering name is given, even with standalone=True.
    standalone = config.standalone
    priority = config.priority if config.priority is not None else random.randint(1, 2**31 - 1)
    with asyncio.Runner(loop_factory=uvloop.new_event_loop) as runner:
        kopf.run(
            loop=runner.get_loop(),
            registry=build_registry(context),
            clusterwide=not config.namespaces,
            namespaces=config.namespaces,
            liveness_endpoint=liveness_endpoint,
            standalone=standalone,
            peering_name=None if standalone else config.peering,
            priority=None if standalone else priority,
        )
