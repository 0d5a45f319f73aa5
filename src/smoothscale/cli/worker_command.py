"""`smoothscale worker`: the sample Streams-style worker of one pod (`smoothscale.sandbox.worker`).

The kubelet stand-in starts it for every pod of the sandbox, configured through environment variables (the
names beside each option); a person can run it by hand against any API server with flags.
"""

from __future__ import annotations

import logging
import signal
import threading
import time
from pathlib import Path
from types import FrameType

import click

from smoothscale.contract import shared_names as contract
from smoothscale.sandbox import environment as env


def _csv(_: click.Context, __: click.Parameter, value: str) -> frozenset[str]:
    return frozenset(part.strip() for part in value.split(",") if part.strip())


@click.command("worker")
@click.option("--pod", envvar=contract.POD_NAME_ENV, required=True, help="This pod's name.")
@click.option("--namespace", envvar=contract.NAMESPACE_ENV, default="default", show_default=True)
@click.option("--app", envvar=contract.APP_ENV, required=True, help="The StreamsApp this pod belongs to.")
@click.option(
    "--configmap",
    envvar=contract.ASSIGNMENT_CONFIGMAP_ENV,
    default=None,
    help="The assignment ConfigMap [default: <app>-assignment].",
)
@click.option(
    "--kubeconfig",
    envvar=[env.KUBECONFIG_ENV, "KUBECONFIG"],
    type=click.Path(dir_okay=False, path_type=Path),
    default=None,
    help="Reach the API with this kubeconfig (else in-cluster, else the mounted assignment).",
)
@click.option(
    "--assignment-dir",
    envvar=env.ASSIGNMENT_DIR_ENV,
    type=click.Path(file_okay=False, path_type=Path),
    default=None,
    help="The mounted assignment ConfigMap, read when there is no API access.",
)
@click.option(
    "--state-dir",
    envvar=contract.STATE_DIR_ENV,
    type=click.Path(file_okay=False, path_type=Path),
    required=True,
    help="Where the task state directories live (the pod's volume).",
)
@click.option("--metrics-host", envvar=env.METRICS_HOST_ENV, default="0.0.0.0", show_default=True)
@click.option(
    "--metrics-port",
    envvar=contract.METRICS_PORT_ENV,
    type=int,
    default=contract.DEFAULT_METRICS_PORT,
    show_default=True,
)
@click.option(
    "--restore-rate",
    envvar=env.RESTORE_RATE_ENV,
    type=float,
    default=20_000.0,
    show_default=True,
    help="Records per second restored, per task.",
)
@click.option(
    "--process-rate",
    envvar=env.PROCESS_RATE_ENV,
    type=float,
    default=2_000.0,
    show_default=True,
    help="Records per second processed at most, per active task.",
)
@click.option(
    "--input-rate",
    envvar=env.INPUT_RATE_ENV,
    type=float,
    default=200.0,
    show_default=True,
    help="Records per second each task's changelog grows by.",
)
@click.option(
    "--initial-offset",
    envvar=env.INITIAL_OFFSET_ENV,
    type=int,
    default=100_000,
    show_default=True,
    help="Records in every changelog at the epoch.",
)
@click.option(
    "--changelog-epoch",
    envvar=env.CHANGELOG_EPOCH_ENV,
    type=float,
    default=None,
    help="Unix time at which the changelogs held --initial-offset records; all pods must share it "
    "[default: now, for a worker run alone].",
)
@click.option(
    "--stateless-subtopologies",
    envvar=env.STATELESS_SUBTOPOLOGIES_ENV,
    default="",
    callback=_csv,
    help="Comma-separated subtopologies whose tasks have no state (nothing to restore, no lag).",
)
@click.option(
    "--record-file",
    envvar=env.RECORD_FILE_ENV,
    type=click.Path(dir_okay=False, path_type=Path),
    default=None,
    help="Append the processing intervals and restorations to this JSON-lines file.",
)
@click.option("--tick-seconds", envvar=env.TICK_SECONDS_ENV, type=float, default=0.1, show_default=True)
@click.option(
    "--claim-seconds",
    envvar=env.CLAIM_SECONDS_ENV,
    type=float,
    default=0.5,
    show_default=True,
    help="Length of each processing interval written ahead to the record file.",
)
@click.option(
    "--lease-seconds",
    envvar=contract.LEASE_SECONDS_ENV,
    type=float,
    default=None,
    help="The pod's lease (spec.failover.leaseSeconds): renew a Lease, process actives only while held.",
)
@click.option(
    "--parent-pid",
    envvar=env.PARENT_PID_ENV,
    type=int,
    default=None,
    help="Exit as soon as this process is no longer the parent.",
)
@click.option("--log-level", envvar=env.LOG_LEVEL_ENV, default="INFO", show_default=True)
def worker_command(
    pod: str,
    namespace: str,
    app: str,
    configmap: str | None,
    kubeconfig: Path | None,
    assignment_dir: Path | None,
    state_dir: Path,
    metrics_host: str,
    metrics_port: int,
    restore_rate: float,
    process_rate: float,
    input_rate: float,
    initial_offset: int,
    changelog_epoch: float | None,
    stateless_subtopologies: frozenset[str],
    record_file: Path | None,
    tick_seconds: float,
    claim_seconds: float,
    lease_seconds: float | None,
    parent_pid: int | None,
    log_level: str,
) -> None:
    """Run the sample Streams-style worker of one pod until SIGTERM or SIGINT."""
    # Imported here so that `smoothscale --help` does not load the kubernetes client.
    from smoothscale.client import ClientConfig  # noqa: PLC0415
    from smoothscale.sandbox.changelog import Changelog  # noqa: PLC0415
    from smoothscale.sandbox.worker import SampleWorker, WorkerConfig  # noqa: PLC0415

    logging.basicConfig(
        level=log_level.upper(), format=f"%(asctime)s {pod} %(name)s %(levelname)s %(message)s"
    )
    config = WorkerConfig(
        client=ClientConfig(
            pod=pod,
            namespace=namespace,
            app=app,
            configmap=configmap,
            kubeconfig=kubeconfig,
            assignment_dir=assignment_dir,
            metrics_host=metrics_host,
            metrics_port=metrics_port,
            lease_seconds=lease_seconds,
        ),
        state_dir=state_dir,
        changelog=Changelog(
            epoch=time.time() if changelog_epoch is None else changelog_epoch,
            initial_offset=initial_offset,
            input_rate=input_rate,
        ),
        restore_rate=restore_rate,
        process_rate=process_rate,
        stateless_subtopologies=stateless_subtopologies,
        record_file=record_file,
        tick_seconds=tick_seconds,
        claim_seconds=claim_seconds,
        parent_pid=parent_pid,
    )
    stop = threading.Event()

    def on_signal(signum: int, _: FrameType | None) -> None:
        logging.getLogger(__name__).info("pod %s: %s, stopping", pod, signal.Signals(signum).name)
        stop.set()

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    worker = SampleWorker(config)
    # the sandbox's partitions between the operator and a pod (`Kubelet.cut_from_operator`)
    signal.signal(signal.SIGUSR1, lambda *_: worker.make_reachable(False))
    signal.signal(signal.SIGUSR2, lambda *_: worker.make_reachable(True))
    worker.run(stop)
