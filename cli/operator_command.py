"""`smoothscale operator`: run the operator (kopf) until SIGTERM or SIGINT.

Every option also reads a `SMOOTHSCALE_*` environment variable, the same ones `kopf run -m
smoothscale.operator.entry` reads, so a Deployment can configure either entry the same way. Logs go to
standard error (plain or JSON); the event journal goes to standard output, and optionally to a file.
"""

from __future__ import annotations

from pathlib import Path

import click


@click.command("operator")
@click.option(
    "--kubeconfig",
    type=click.Path(dir_okay=False, exists=True, path_type=Path),
    envvar="SMOOTHSCALE_KUBECONFIG",
    help="Credentials from this kubeconfig; default: in-cluster, then $KUBECONFIG or ~/.kube/config.",
)
@click.option("--context", "kube_context", envvar="SMOOTHSCALE_KUBE_CONTEXT", help="Kubeconfig context.")
@click.option(
    "--namespace",
    "-n",
    "namespaces",
    multiple=True,
    envvar="SMOOTHSCALE_NAMESPACES",
    help="Serve only this namespace (repeatable); default: all namespaces.",
)
@click.option(
    "--standalone",
    is_flag=True,
    envvar="SMOOTHSCALE_STANDALONE",
    help="No peering: for a single replica. Otherwise peering is mandatory and one replica acts.",
)
@click.option("--peering", default="smoothscale", show_default=True, envvar="SMOOTHSCALE_PEERING")
@click.option(
    "--priority", type=int, envvar="SMOOTHSCALE_PRIORITY", help="Peering priority; default: random."
)
@click.option(
    "--scrape-interval",
    type=click.FloatRange(min=0.05),
    default=5.0,
    show_default=True,
    envvar="SMOOTHSCALE_SCRAPE_INTERVAL",
    help="Seconds between scrapes (and reconciliations) of an app.",
)
@click.option(
    "--scrape-timeout",
    type=click.FloatRange(min=0.01),
    default=2.0,
    show_default=True,
    envvar="SMOOTHSCALE_SCRAPE_TIMEOUT",
)
@click.option(
    "--debounce",
    type=click.FloatRange(min=0.0),
    default=0.2,
    show_default=True,
    envvar="SMOOTHSCALE_DEBOUNCE",
    help="Seconds to gather a burst of changes into one reconciliation.",
)
@click.option(
    "--startup-grace",
    type=click.FloatRange(min=0.0),
    default=30.0,
    show_default=True,
    envvar="SMOOTHSCALE_STARTUP_GRACE",
    help="Seconds a new app's first plan may wait for all its pods to report metrics.",
)
@click.option(
    "--assignment-recheck",
    type=click.FloatRange(min=0.1),
    default=60.0,
    show_default=True,
    envvar="SMOOTHSCALE_ASSIGNMENT_RECHECK",
    help="Seconds between re-reads of each assignment ConfigMap (a deleted one is rebuilt behind a barrier).",
)
@click.option("--metrics-host", default="0.0.0.0", show_default=True, envvar="SMOOTHSCALE_METRICS_HOST")
@click.option(
    "--metrics-port",
    type=click.IntRange(min=0, max=65535),
    default=8080,
    show_default=True,
    envvar="SMOOTHSCALE_METRICS_PORT",
    help="Port of the operator's /metrics (0: a free port).",
)
@click.option("--no-metrics", is_flag=True, help="Serve no /metrics.")
@click.option(
    "--liveness",
    envvar="SMOOTHSCALE_LIVENESS",
    help="kopf's liveness endpoint, e.g. http://0.0.0.0:8081/healthz.",
)
@click.option(
    "--journal-file",
    type=click.Path(dir_okay=False, path_type=Path),
    envvar="SMOOTHSCALE_JOURNAL_FILE",
    help="Also append the JSON event journal to this file.",
)
@click.option("--no-journal-stdout", is_flag=True, help="Do not write the journal to standard output.")
@click.option("--log-json", is_flag=True, envvar="SMOOTHSCALE_LOG_JSON", help="Log JSON lines.")
@click.option("--verbose", "-v", is_flag=True, help="Debug logging.")
def operator_command(
    kubeconfig: Path | None,
    kube_context: str | None,
    namespaces: tuple[str, ...],
    standalone: bool,
    peering: str,
    priority: int | None,
    scrape_interval: float,
    scrape_timeout: float,
    debounce: float,
    startup_grace: float,
    assignment_recheck: float,
    metrics_host: str,
    metrics_port: int,
    no_metrics: bool,
    liveness: str | None,
    journal_file: Path | None,
    no_journal_stdout: bool,
    log_json: bool,
    verbose: bool,
) -> None:
    """Run the smoothscale operator: watch StreamsApps and run their pods without rebalance downtime."""
    # Imported here: kopf and the operator load only when this sub-command runs.
    import kopf  # noqa: PLC0415

    from smoothscale.operator.config import OperatorConfig  # noqa: PLC0415
    from smoothscale.operator.main import run  # noqa: PLC0415

    kopf.configure(verbose=verbose, log_format=kopf.LogFormat.JSON if log_json else kopf.LogFormat.FULL)
    config = OperatorConfig(
        kubeconfig=kubeconfig,
        kube_context=kube_context,
        scrape_interval=scrape_interval,
        scrape_timeout=scrape_timeout,
        debounce=debounce,
        startup_grace=startup_grace,
        assignment_recheck=assignment_recheck,
        metrics_host=metrics_host,
        metrics_port=None if no_metrics else metrics_port,
        journal_stdout=not no_journal_stdout,
        journal_file=journal_file,
        peering=peering,
        standalone=standalone,
        priority=priority,
        namespaces=tuple(namespaces),
    )
    run(config, liveness_endpoint=liveness)
