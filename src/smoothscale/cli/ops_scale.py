"""`smoothscale scale APP --to 80%|N`: the drafts' scale-down tool, through the scale subresource.

The drafts ask for a tool where a person gives "a % of scale down" (40 pods at 80% leaves 8 of them) and
the system picks which pods leave. Here the command only sets the replica count, through `/scale` exactly as
`kubectl scale` or an autoscaler would; the operator picks the pods (old revisions, then highest ordinals)
and moves their tasks off before retiring them.

A percentage is of the current `spec.replicas`, rounded up: a scale-down never removes more pods than the
percentage says (40 at 75% keeps 30; 5 at 50% keeps 3), and any positive percentage keeps at least one pod.

The rebalancing guide says to scale in few, large steps and not to scale again while tasks move: the
command warns when `status.autoscaling.migrating` is true (the operator still coalesces the requests).
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import Any

import click

from smoothscale.cli.ops_kube import Kube, OpsUsageError, change, dry_run_option, kube_options
from smoothscale.resource import api_kind

_TARGET = re.compile(r"^(?P<number>[0-9]+(?:\.[0-9]+)?)(?P<percent>%?)$")


@dataclass(frozen=True)
class ScaleTo:
    """`--to`: an absolute replica count, or a percentage of the current one."""

    value: float
    percent: bool

    def replicas(self, current: int) -> int:
        if not self.percent:
            return int(self.value)
        return math.ceil(current * self.value / 100 - 1e-9)


def parse_to(text: str) -> ScaleTo:
    """`80%`, `12.5%` or `6`; ValueError naming what is wrong otherwise."""
    match = _TARGET.match(text.strip())
    if match is None:
        raise ValueError(
            f"--to {text!r}: expected a replica count (6) or a percentage of the current one (80%)"
        )
    value = float(match.group("number"))
    percent = bool(match.group("percent"))
    if not percent and not value.is_integer():
        raise ValueError(f"--to {text!r}: a replica count is a whole number")
    return ScaleTo(value, percent)


def _current_replicas(app: dict[str, Any]) -> int:
    return int((app.get("spec") or {}).get("replicas") or 0)


@click.command("scale")
@click.argument("app")
@click.option("--to", "to", required=True, help="Replicas (6) or a percentage of the current ones (80%).")
@dry_run_option
@kube_options
def scale_command(kube: Kube, app: str, to: str, dry_run: bool) -> None:
    """Set APP's replicas, as `kubectl scale` does (the operator moves tasks before pods go)."""
    try:
        target = parse_to(to)
    except ValueError as error:
        raise OpsUsageError(str(error)) from error
    body = kube.app(app)
    current = _current_replicas(body)
    replicas = target.replicas(current)
    if replicas == current:
        click.echo(f"StreamsApp {app} already has {current} replicas: nothing to do")
        return
    if ((body.get("status") or {}).get("autoscaling") or {}).get("migrating"):
        click.echo(
            f"warning: {app} is still moving tasks; scaling again now re-targets the move (prefer few, "
            "large steps)",
            err=True,
        )
    change(
        dry_run,
        f"scale StreamsApp {app} from {current} to {replicas} replicas",
        lambda: kube.custom.patch_namespaced_custom_object_scale(
            api_kind.GROUP,
            api_kind.VERSION,
            kube.namespace,
            api_kind.PLURAL,
            app,
            {"spec": {"replicas": replicas}},
        ),
    )
