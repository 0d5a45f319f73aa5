"""`smoothscale explain APP TASK`: why a task is where it is, and where it goes next.

The operator does not publish its planner input, so the command observes what an operator's round observes
(the spec, the pods, their nodes' zones, the published assignment, the pods' metrics) and runs the operator's
own round on it: `control.step.step`, the function the reconciler calls, on a fresh memory (an operator that
starts now: its averaged rates and changelog lengths start from what the pods report now). The step decides
the pod set, whether to plan and the planner's input exactly as the operator would; the plan it makes is the
one explained, with the task's published roles and its roles in the plan's balanced target. When the step
would not plan (a pod holding tasks reports nothing, no pod stays), the command says why instead. A pod
whose metrics cannot be reached from where the command runs is observed as the operator observes a pod it
cannot scrape (the failure, not a lag of 0), so the step decides about it as the operator's would; the output
names such pods, since from outside the cluster the reason may be the command's place, not the pod. Kafka is
not read (racks and changelog ends then come from the spec and the pods); the output says so too.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING

import click

from smoothscale.cli.ops_kube import Kube, OpsUsageError, kube_options, pod_metrics
from smoothscale.contract.publication import EMPTY, Publication
from smoothscale.control import step as control_step
from smoothscale.control.observed import ScrapeFailure, ScrapeResult
from smoothscale.control.pods import PodInfo
from smoothscale.control.snapshot import task_ids
from smoothscale.control.step import Observation
from smoothscale.resource import InvalidSpecError, StreamsAppSpec, load_spec, template_revision

if TYPE_CHECKING:
    from smoothscale.assignor.models import Plan, Snapshot


def observation(
    app: str,
    spec: StreamsAppSpec,
    pods: Sequence[PodInfo],
    zones: Mapping[str, str],
    publication: Publication,
    metrics: Mapping[str, ScrapeResult],
    now: datetime,
) -> Observation:
    """What an operator's round would observe of `app`, as far as the command can see it (a pod it could not
    scrape with the failure the operator would record)."""
    return Observation(
        now=now,
        app=app,
        spec=spec,
        problems=None,
        spec_generation=0,
        status_generation=0,
        previous_status=None,
        pods=pods,
        zones=zones,
        results=metrics,
        published=publication,
        revision=template_revision(spec),
    )


@dataclass(frozen=True)
class Replanned:
    """What the operator's step planned on an observation: its planner input and the plan."""

    snapshot: Snapshot
    plan: Plan


class NoPlan(Exception):
    """The operator's step would not plan on this observation; the message says why."""


def replan(seen: Observation) -> Replanned:
    """The plan the operator would make from `seen`: its round (`control.step.step`) on a fresh memory, with
    planning inline where the reconciler plans in a thread. Raises `NoPlan` when that round would not plan."""
    # The planner loads numpy and scipy: only when a command explains.
    from smoothscale.assignor.planner import plan as make_plan  # noqa: PLC0415

    planned: list[Replanned] = []

    def planner(snapshot: Snapshot) -> Plan:
        planned.append(Replanned(snapshot, make_plan(snapshot)))
        return planned[-1].plan

    decisions, _, _ = control_step.step_planning_inline(
        control_step.initial_memory(seen.now), seen, control_step.operator_round_config(), planner
    )
    if not planned:
        raise NoPlan(f"the operator would not plan now: {decisions.planning.waits or 'no plan is due'}")
    return planned[0]


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
        lines.append(
            f"note: {_unreached(unreached)}, planned as the operator plans around a pod it cannot scrape"
        )
    return lines


def _unreached(pods: Sequence[str]) -> str:
    return f"no metrics from {', '.join(pods)} from here"


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
    seen = observation(app, spec, pods, kube.zones(pods), publication, metrics, datetime.now(UTC))
    unreached = [pod for pod, result in metrics.items() if isinstance(result, ScrapeFailure)]
    try:
        plan = replan(seen).plan
    except NoPlan as why:
        where = (
            f" ({_unreached(unreached)}: run it where the pods' metrics port is reachable)"
            if unreached
            else ""
        )
        raise click.ClickException(f"{why}{where}") from None
    for line in explain_lines(task, publication, plan, unreached):
        click.echo(line)
    if spec.kafka is not None:
        click.echo("note: Kafka is not read here: racks from the spec, changelog ends from the pods")
