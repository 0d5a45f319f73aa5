"""`smoothscale swap APP`: replace every pod of an app (the drafts' online host swap), on request.

The operator replaces pods whose `smoothscale.io/revision` (a hash of `spec.template`) differs from the
template's, so the command changes the template and nothing else: it stamps `smoothscale.io/restartedAt`
on the template's annotations, as `kubectl rollout restart` does for a Deployment. With `updateStrategy:
Swap` new pods are surged, warmed up and take over before the old ones leave; with `RollingRestart` pods
restart in place one at a time.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import click

from smoothscale.cli.ops_kube import Kube, change, dry_run_option, kube_options
from smoothscale.control import object_names
from smoothscale.control.pods import format_time
from smoothscale.resource import api_kind


def swap_patch(now: datetime) -> dict[str, Any]:
    """The merge patch that gives the app a new template revision (and nothing else)."""
    annotations = {object_names.RESTARTED_AT_ANNOTATION: format_time(now)}
    return {"spec": {"template": {"metadata": {"annotations": annotations}}}}


@click.command("swap")
@click.argument("app")
@dry_run_option
@kube_options
def swap_command(kube: Kube, app: str, dry_run: bool) -> None:
    """Replace every pod of APP by a new one, moving tasks first (a host swap)."""
    body = kube.app(app)
    strategy = ((body.get("spec") or {}).get("scaling") or {}).get("updateStrategy") or "Swap"
    patch = swap_patch(datetime.now(UTC))
    stamp = patch["spec"]["template"]["metadata"]["annotations"][object_names.RESTARTED_AT_ANNOTATION]
    change(
        dry_run,
        f"replace every pod of StreamsApp {app} (updateStrategy {strategy}): template annotation "
        f"{object_names.RESTARTED_AT_ANNOTATION}={stamp}",
        lambda: kube.custom.patch_namespaced_custom_object(
            api_kind.GROUP, api_kind.VERSION, kube.namespace, api_kind.PLURAL, app, patch
        ),
    )
