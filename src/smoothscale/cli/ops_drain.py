"""`smoothscale drain POD`: start the leaving procedure for one pod (Contract 3's `smoothscale.io/leaving`).

The same as `kubectl annotate pod POD smoothscale.io/leaving=true`, with the checks a person forgets: the pod
must be one the operator runs (else nothing would ever act on the annotation), and a pod already leaving is
left alone (its annotation holds the time the operator first saw it, which starts its scale-down timeout;
overwriting it would restart that clock). The operator then moves the pod's tasks to caught-up pods,
deletes the pod once it holds nothing, and creates a replacement under a new ordinal.
"""

from __future__ import annotations

import click

from smoothscale.cli.ops_kube import Kube, OpsUsageError, change, dry_run_option, kube_options
from smoothscale.control import object_names
from smoothscale.control.pods import PodInfo, pod_info

DRAIN_VALUE = "true"
"""What the command writes: the operator replaces any value that is not a time by the time it sees it."""


def drain_refusal(pod: PodInfo, managed_by: str | None) -> str | None:
    """Why `pod` cannot be drained, or None if it can."""
    if managed_by != object_names.MANAGED_BY or pod.ordinal is None:
        return (
            f"pod {pod.name!r} is not run by smoothscale (no {object_names.APP_LABEL} label of an app's pod)"
        )
    return None


@click.command("drain")
@click.argument("pod")
@dry_run_option
@kube_options
def drain_command(kube: Kube, pod: str, dry_run: bool) -> None:
    """Mark POD leaving: its tasks move to other pods, then the operator replaces it."""
    body = kube.pod(pod)
    info = pod_info(body)
    labels = (body.get("metadata") or {}).get("labels") or {}
    refusal = drain_refusal(info, labels.get(object_names.MANAGED_BY_LABEL))
    if refusal is not None:
        raise OpsUsageError(refusal)
    if info.is_leaving:
        click.echo(f"pod {pod} is already leaving (since {info.leaving}): nothing to do")
        return
    patch = {"metadata": {"annotations": {object_names.LEAVING_ANNOTATION: DRAIN_VALUE}}}
    change(
        dry_run,
        f"annotate pod {pod} {object_names.LEAVING_ANNOTATION}={DRAIN_VALUE} (app {info.app})",
        lambda: kube.core.patch_namespaced_pod(pod, kube.namespace, patch),
    )
