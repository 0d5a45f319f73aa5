"""`smoothscale status APP`: per pod, what it runs and how far behind it is; a migration's progress and ETA;
when the next probe is and why.

Everything comes from what the operator publishes (the assignment ConfigMap, decoded with
`decode_publication`, and the app's status) plus the pods themselves: their leaving annotation, their node's
zone, and their metrics when they can be reached (lag is the sum of the lags the pod reports for the tasks
it holds state for; "-" when the pod cannot be scraped from where the command runs).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import click

from smoothscale.cli.ops_kube import Kube, kube_options, pod_metrics
from smoothscale.contract.publication import Publication
from smoothscale.control.observed import PodMetrics, ScrapeResult
from smoothscale.control.pods import PodInfo
from smoothscale.control.zones import pod_zone
from smoothscale.resource import MetricsSpec, StreamsAppSpec


@dataclass(frozen=True)
class PodRow:
    pod: str
    actives: int
    standbys: int
    warmups: int
    lag: int | None
    zone: str
    leaving: str
    ready: bool


def pod_rows(
    pods: Sequence[PodInfo],
    publication: Publication | None,
    metrics: Mapping[str, ScrapeResult],
    zones: Mapping[str, str],
) -> list[PodRow]:
    """One row per pod, plus one per pod the publication still names that no longer exists."""
    assignment = publication.assignment if publication is not None else {}
    listed = {p.name: p for p in pods}
    rows = []
    for name in sorted(set(listed) | set(assignment), key=_by_ordinal):
        roles = assignment.get(name)
        pod = listed.get(name)
        scraped = metrics.get(name)
        lag = sum(scraped.lags.values()) if isinstance(scraped, PodMetrics) else None
        rows.append(
            PodRow(
                pod=name,
                actives=len(roles.active) if roles else 0,
                standbys=len(roles.standby) if roles else 0,
                warmups=len(roles.warmup) if roles else 0,
                lag=lag,
                zone=(pod_zone(pod.node, zones) or "-") if pod else "-",
                leaving=_leaving(pod),
                ready=pod.ready if pod else False,
            )
        )
    return rows


def _by_ordinal(name: str) -> tuple[int, str]:
    tail = name.rsplit("-", 1)[-1]
    return (int(tail) if tail.isdigit() else -1, name)


def _leaving(pod: PodInfo | None) -> str:
    if pod is None:
        return "gone"
    if pod.deleting:
        return "deleting"
    return f"since {pod.leaving}" if pod.is_leaving else "-"


def summary(name: str, status: Mapping[str, Any], publication: Publication | None) -> list[str]:
    """The app-wide lines: phase, replicas, generation, lag, migration, next probe and why."""
    assignment = status.get("assignment") or {}
    lag = status.get("lag") or {}
    autoscaling = status.get("autoscaling") or {}
    probing = status.get("probing") or {}
    generation = publication.generation if publication is not None else 0
    lines = [
        f"StreamsApp {name}: {status.get('phase', 'Pending')}, {status.get('readyReplicas', 0)}/"
        f"{status.get('replicas', 0)} pods ready, generation {generation} "
        f"({len(publication.revoking) if publication else 0} hand-over(s) in flight)",
        f"lag: total {lag.get('total', 0)}, max task {lag.get('maxTask', 0)}; cross-rack cost "
        f"{assignment.get('crossRackCost', 0)}",
        f"migrating: {'yes' if autoscaling.get('migrating') else 'no'}"
        + (
            f"; recommended replicas: {autoscaling['recommendedReplicas']}"
            if autoscaling.get("recommendedReplicas") is not None
            else ""
        ),
    ]
    lines += migration(status.get("progress"))
    if probing.get("nextProbeTime"):
        lines.append(f"next probe: {probing['nextProbeTime']} ({probing.get('reason') or 'no reason given'})")
    else:
        lines.append("next probe: none (the assignment is stable)")
    return lines


def migration(progress: Mapping[str, Any] | None) -> list[str]:
    """The migration in progress (`status.progress`): how far, the ETA, and each warming copy's."""
    if not progress:
        return []
    eta = progress.get("estimatedCompletionTime") or "not yet (no restore rate measured)"
    get = progress.get
    lines = [
        f"progress: {get('percent', 0):.1f}% since {get('startTime')}, "
        f"{get('recordsRestored', 0)} records restored, {get('recordsLeft', 0)} left; "
        f"{get('copiesWarming', 0)} warming, {get('tasksQueued', 0)} queued behind the warmup cap, "
        f"{get('activesRestoring', 0)} active(s) restoring, {get('handoversPending', 0)} hand-over(s); "
        f"ETA {eta}"
    ]
    for warmup in progress.get("warmups") or []:
        rate = warmup.get("restoreRate")
        lines.append(
            f"  warming {warmup.get('task')} on {warmup.get('pod')}: {warmup.get('recordsLeft')} records left"
            + (f" at {rate:.0f}/s, ETA {warmup.get('estimatedCompletionTime')}" if rate is not None else "")
        )
    return lines


def render(rows: Sequence[PodRow]) -> list[str]:
    header = ("POD", "READY", "ACTIVE", "STANDBY", "WARMUP", "LAG", "ZONE", "LEAVING")
    table = [header] + [
        (
            r.pod,
            "yes" if r.ready else "no",
            str(r.actives),
            str(r.standbys),
            str(r.warmups),
            "-" if r.lag is None else str(r.lag),
            r.zone,
            r.leaving,
        )
        for r in rows
    ]
    widths = [max(len(line[i]) for line in table) for i in range(len(header))]
    return ["  ".join(cell.ljust(w) for cell, w in zip(line, widths, strict=True)).rstrip() for line in table]


def metrics_spec(body: Mapping[str, Any]) -> MetricsSpec:
    """The app's metrics settings, without requiring the rest of the spec to be valid."""
    try:
        return StreamsAppSpec.model_validate(body.get("spec") or {}).metrics
    except ValueError:
        return MetricsSpec.model_validate((body.get("spec") or {}).get("metrics") or {})


@click.command("status")
@click.argument("app")
@kube_options
def status_command(kube: Kube, app: str) -> None:
    """Show APP's pods (tasks, lag, zone, leaving) and when the next probing rebalance is due."""
    body = kube.app(app)
    pods = kube.app_pods(app)
    publication = kube.publication(app)
    metrics = pod_metrics(pods, metrics_spec(body))
    for line in summary(app, body.get("status") or {}, publication):
        click.echo(line)
    click.echo("")
    for line in render(pod_rows(pods, publication, metrics, kube.zones(pods))):
        click.echo(line)
