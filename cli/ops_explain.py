"""`smoothscale explain APP TASK`: why a task is where it is, and where it goes next.

The operator does not publish its planner input, so the command rebuilds it the way the operator does
(`snapshot.build_snapshot`): the spec, the pods that can hold tasks (with their node's zone and leaving
time), the published assignment, and the lags, changelog end offsets and processing rates the pods report.
It then runs the same planner and prints the plan's `explain` line for the task, with its published roles
and its roles in the plan's balanced target. Pods whose metrics cannot be reached from where the command
runs count as reporting no lag, as they would for the operator's first plan; the output says which.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from typing import TYPE_CHECKING

import click

from smoothscale.cli.ops_kube import Kube, OpsUsageError, kube_options, pod_metrics
from smoothscale.contract.publication import EMPTY, Publication
from smoothscale.operator.control.pods import PodInfo, leaving_since
from smoothscale.operator.control.rates import owner_rates
from smoothscale.operator.control.snapshot import (
    ClientObservation,
    build_snapshot,
    merge_end_offsets,
    task_ids,
)
from smoothscale.operator.control.zones import pod_zone
from smoothscale.operator.resource import InvalidSpecError, StreamsAppSpec, load_spec

if TYPE_CHECKING:
    from smoothscale.assignor.models import Plan
    from smoothscale.operator.control.observed import PodMetrics


def replan(
    spec: StreamsAppSpec,
    pods: Sequence[PodInfo],
    zones: Mapping[str, str],
    publication: Publication,
    metrics: Mapping[str, PodMetrics],
    now: datetime,
) -> Plan:
    """The plan the operator would make from these observations."""
    # The planner loads numpy and scipy: only when a command explains.
    from smoothscale.assignor.planner import plan as make_plan  # noqa: PLC0415

    clients = [
        ClientObservation(
            pod.name,
            pod_zone(pod.node, zones),
            leaving_since(pod) if pod.is_leaving else None,
            metrics[pod.name].lags if pod.name in metrics else {},
        )
        for pod in pods
        if pod.schedulable_client
    ]
    end_offsets = merge_end_offsets({}, (m.end_offsets for m in metrics.values()))
    snapshot = build_snapshot(spec, now, clients, publication, end_offsets, owner_rates(metrics, publication))
    return make_plan(snapshot)


def _roles(assignment: Mapping[str, object], task: str) -> str:
    found = []
    for pod in sorted(assignment):
        roles = assignment[pod]
        for role in ("active", "standby", "warmup"):
            if task in getattr(roles, role, ()):
                found.append(f"{role} on {pod}")
    return ", ".join(found) or "nowhere"


def explain_lines(task: str, publication: Publication, plan: Plan, unreached: Sequence[str]) -> list[str]:
    """What `explain` prints for `task`: published roles, hand-over, the plan's reason, target, follow-up."""
    lines = [f"task {task} (generation {publication.generation}): {_roles(publication.assignment, task)}"]
    revocation = publication.revoking.get(task)
    if revocation is not None:
        lines.append(
            f"hand-over: revoked from {revocation.owner} in generation {revocation.generation}, "
            "waiting for that pod to stop it"
        )
    lines.append(f"next generation: {_roles(plan.assignment, task)}")
    lines.append(f"why: {plan.explain.get(task, '')}")
    lines.append(f"target (balanced): {_roles(plan.target, task)}")
    if plan.followup is not None:
        lines.append(
            f"not stable yet: {plan.followup.reason}; next probe in {plan.followup.probe_after_seconds:g}s"
        )
    else:
        lines.append("stable: the task stays where the target puts it")
    if unreached:
        lines.append(f"note: no metrics from {', '.join(unreached)} (counted as reporting no lag)")
    return lines


@click.command("explain")
@click.argument("app")
@click.argument("task")
@kube_options
def explain_command(kube: Kube, app: str, task: str) -> None:
    """Say why TASK (e.g. 0_3) of APP is where it is, and where the planner moves it next."""
    body = kube.app(app)
    try:
        spec = load_spec(body.get("spec") or {})
    except InvalidSpecError as error:
        raise click.ClickException(f"StreamsApp {app} has an invalid spec: {error}") from error
    if task not in set(task_ids(spec)):
        raise OpsUsageError(
            f"StreamsApp {app} has no task {task!r}: tasks are <subtopology>_<partition>, e.g. "
            f"{task_ids(spec)[0] if task_ids(spec) else '0_0'}"
        )
    pods = kube.app_pods(app)
    publication = kube.publication(app) or EMPTY
    metrics = pod_metrics(pods, spec.metrics)
    plan = replan(spec, pods, kube.zones(pods), publication, metrics, datetime.now(UTC))
    unreached = [p.name for p in pods if p.schedulable_client and p.name not in metrics]
    for line in explain_lines(task, publication, plan, unreached):
        click.echo(line)
