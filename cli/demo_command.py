"""`smoothscale demo`: see smoothscale work in a few minutes, with no cluster (`smoothscale.sandbox.demo`).

It starts an emulated API server, the kubelet stand-in (a real worker process per pod) and the operator,
applies an example StreamsApp, then scales out, scales in, swaps the hosts and crashes a pod, showing each
step live; it ends with a summary, a PNG timeline, and exit status 1 if any invariant broke.
"""

from __future__ import annotations

import signal
import sys
import tempfile
from pathlib import Path
from types import FrameType

import click


@click.command("demo")
@click.option(
    "--output-dir",
    type=click.Path(file_okay=False, path_type=Path),
    default=None,
    help="Where the kubeconfig, records, journal, logs and timeline go [default: a new temporary directory].",
)
@click.option(
    "--speed",
    type=click.FloatRange(min=0.05),
    default=1.0,
    show_default=True,
    help="Multiplies the workers' restore rate: 2 restores twice as fast.",
)
@click.option("--keep", is_flag=True, help="Leave the sandbox running afterwards, for kubectl, until Ctrl-C.")
@click.option(
    "--kafka",
    is_flag=True,
    help="Run the pods as real Kafka Streams instances (the Java sample app, spec.runtime KafkaStreams) "
    "against 3 real Kafka brokers, one per zone, whose racks the operator reads (spec.kafka); checks that "
    "every order is counted once. Needs Java; Maven builds the app once.",
)
@click.option(
    "--api-port",
    type=click.IntRange(0, 65535),
    default=0,
    show_default=True,
    help="API server port, 0: any.",
)
@click.option(
    "--kube-bin",
    type=click.Path(file_okay=False, exists=True, path_type=Path),
    envvar="SMOOTHSCALE_KUBE_BIN",
    default=None,
    help="Run on a real control plane (etcd, kube-apiserver, kube-controller-manager) from this folder, the "
    "one tools/kube/build.sh prints, instead of the embedded emulator.",
)
def demo_command(
    output_dir: Path | None, speed: float, keep: bool, api_port: int, kafka: bool, kube_bin: Path | None
) -> None:
    """Run the operator on an emulated cluster (or a real API server: --kube-bin) through scale-out,
    scale-in, a host swap and a pod crash."""
    # Imported here so that `smoothscale --help` does not load the operator, kopf or matplotlib.
    from smoothscale.sandbox.demo_main import run_demo  # noqa: PLC0415

    directory = output_dir or Path(tempfile.mkdtemp(prefix="smoothscale-demo-"))

    def stop(signum: int, _: FrameType | None) -> None:
        raise SystemExit(128 + signum)  # unwinds the sandbox: every process it started is stopped

    signal.signal(signal.SIGTERM, stop)
    exit_code = run_demo(
        directory, sys.stdout, speed=speed, keep=keep, api_port=api_port, kafka=kafka, kube_bin=kube_bin
    )
    sys.exit(exit_code)
