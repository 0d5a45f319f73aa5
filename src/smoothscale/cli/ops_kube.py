"""What every operations command shares: kubeconfig options, the API client, lookups that fail clearly.

The operations commands (`scale`, `drain`, `swap`, `status`, `explain`) run on a person's machine against
any cluster their kubeconfig reaches, so they use the `kubernetes` client and its kubeconfig loading
(`--kubeconfig`, `--context`, the context's namespace unless `--namespace` says otherwise), not the
operator's own client. A name that does not exist is a usage error: exit code 2, naming the kind, the name
and the namespace, never a stack trace of a 404.
"""

from __future__ import annotations

import urllib.error
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import click

from smoothscale.contract.configmap import CorruptAssignment, from_configmap
from smoothscale.contract.publication import Publication
from smoothscale.control import object_names
from smoothscale.control.pods import PodInfo, pod_info
from smoothscale.control.zones import node_zone
from smoothscale.resource import MetricsSpec, api_kind

if TYPE_CHECKING:
    from smoothscale.control.observed import ScrapeResult

SCRAPE_TIMEOUT = 2.0
"""Seconds to wait for one pod's metrics: `status` and `explain` are interactive."""


class OpsUsageError(click.UsageError):
    """A name or value given on the command line is wrong: exit code 2, with a message naming it."""

    exit_code = 2


@dataclass(frozen=True)
class Kube:
    """The API of one kubeconfig context, and the namespace the command works in."""

    core: Any
    custom: Any
    namespace: str
    client: Any

    def app(self, name: str) -> dict[str, Any]:
        """The StreamsApp `name`; OpsUsageError if there is none."""
        found = self._get(
            "StreamsApp",
            name,
            lambda: self.custom.get_namespaced_custom_object(
                api_kind.GROUP, api_kind.VERSION, self.namespace, api_kind.PLURAL, name
            ),
        )
        return dict(found)

    def pod(self, name: str) -> dict[str, Any]:
        """The pod `name` as a plain dict (camelCase, as the API returns it); OpsUsageError if missing."""
        found = self._get("pod", name, lambda: self.core.read_namespaced_pod(name, self.namespace))
        return dict(self.client.sanitize_for_serialization(found))

    def app_pods(self, app: str) -> list[PodInfo]:
        """The pods the operator runs for `app`, by ordinal."""
        selector = object_names.managed_selector(app)
        listed = self.core.list_namespaced_pod(self.namespace, label_selector=selector)
        pods = [pod_info(self.client.sanitize_for_serialization(item)) for item in listed.items]
        return sorted((p for p in pods if p.ordinal is not None), key=lambda p: p.ordinal or 0)

    def publication(self, app: str) -> Publication | None:
        """The published assignment of `app`, or None before the operator has published one."""
        try:
            configmap = self.core.read_namespaced_config_map(
                object_names.assignment_configmap(app), self.namespace
            )
        except self._api_exception as error:
            if getattr(error, "status", None) == 404:
                return None
            raise
        try:
            return from_configmap(self.client.sanitize_for_serialization(configmap))
        except CorruptAssignment as error:
            raise click.ClickException(f"{object_names.assignment_configmap(app)}: {error}") from error

    def zones(self, pods: list[PodInfo]) -> dict[str, str]:
        """node -> zone of the pods' nodes; a node that cannot be read (no permission) counts as no zone."""
        out: dict[str, str] = {}
        for node in sorted({p.node for p in pods if p.node is not None}):
            try:
                zone = node_zone(self.client.sanitize_for_serialization(self.core.read_node(node)))
            except self._api_exception:
                continue
            if zone is not None:
                out[node] = zone
        return out

    @property
    def _api_exception(self) -> type[Exception]:
        import kubernetes  # noqa: PLC0415

        return kubernetes.client.ApiException

    def _get(self, kind: str, name: str, read: Callable[[], Any]) -> Any:
        try:
            return read()
        except self._api_exception as error:
            if getattr(error, "status", None) == 404:
                raise OpsUsageError(f"{kind} {name!r} not found in namespace {self.namespace!r}") from error
            raise


def connect(kubeconfig: Path | None, context: str | None, namespace: str | None) -> Kube:
    """The API of `context` in `kubeconfig` (defaults as kubectl's); the namespace defaults to the
    context's, then `default`."""
    import kubernetes  # noqa: PLC0415  (the client is slow to import; `smoothscale --help` skips it)

    config_file = str(kubeconfig) if kubeconfig is not None else None
    try:
        contexts, current = kubernetes.config.list_kube_config_contexts(config_file=config_file)
        chosen = current if context is None else next((c for c in contexts if c["name"] == context), None)
        if chosen is None:
            known = ", ".join(sorted(c["name"] for c in contexts))
            raise OpsUsageError(f"context {context!r} is not in the kubeconfig (it has: {known})")
        client = kubernetes.config.new_client_from_config(config_file=config_file, context=chosen["name"])
    except kubernetes.config.ConfigException as error:
        raise OpsUsageError(f"kubeconfig: {error}") from error
    namespace = namespace or (chosen.get("context") or {}).get("namespace") or "default"
    return Kube(
        core=kubernetes.client.CoreV1Api(client),
        custom=kubernetes.client.CustomObjectsApi(client),
        namespace=namespace,
        client=client,
    )


F = TypeVar("F", bound=Callable[..., Any])


def kube_options(command: F) -> F:
    """`--kubeconfig`, `--context`, `--namespace`: the command receives them as one `kube` (a Kube)."""

    def connected(kubeconfig: Path | None, context: str | None, namespace: str | None, **rest: Any) -> Any:
        return command(kube=connect(kubeconfig, context, namespace), **rest)

    connected.__name__ = command.__name__
    connected.__doc__ = command.__doc__
    decorated: Any = connected
    for option in (
        click.option("--namespace", "-n", help="Namespace of the app; default: the context's."),
        click.option("--context", help="Kubeconfig context; default: the current one."),
        click.option(
            "--kubeconfig",
            type=click.Path(dir_okay=False, exists=True, path_type=Path),
            help="Kubeconfig file; default: $KUBECONFIG, then ~/.kube/config.",
        ),
    ):
        decorated = option(decorated)
    return decorated  # type: ignore[no-any-return]


dry_run_option = click.option("--dry-run", is_flag=True, help="Print what would change and change nothing.")


def change(dry_run: bool, description: str, apply: Callable[[], object]) -> None:
    """Carry out one change (or, with --dry-run, only say what it would be)."""
    if dry_run:
        click.echo(f"dry run: would {description}")
        return
    apply()
    click.echo(description[0].upper() + description[1:])


def pod_metrics(pods: list[PodInfo], metrics: MetricsSpec) -> dict[str, ScrapeResult]:
    """The pods' metrics, scraped as the operator does, and for a pod that does not answer the failure the
    operator would record (from outside the cluster pod IPs are often unreachable: the commands say so)."""
    # The reader loads prometheus-client's parser: only when a command scrapes.
    from smoothscale.control.exposition import InvalidMetricsError, parse_metrics, scrape_targets  # noqa: PLC0415
    from smoothscale.control.observed import FailureReason, ScrapeFailure  # noqa: PLC0415

    out: dict[str, ScrapeResult] = {}
    for pod, url in scrape_targets(pods, metrics).items():
        try:
            with urllib.request.urlopen(url, timeout=SCRAPE_TIMEOUT) as response:
                out[pod] = parse_metrics(response.read().decode(), metrics.names)
        except urllib.error.HTTPError as error:
            out[pod] = ScrapeFailure(FailureReason.HTTP_ERROR, f"GET {url}: HTTP {error.code}")
        except OSError as error:
            out[pod] = ScrapeFailure(FailureReason.UNREACHABLE, f"GET {url}: {error}")
        except InvalidMetricsError as error:
            out[pod] = ScrapeFailure(FailureReason.INVALID_METRICS, f"GET {url}: {error}")
    return out
