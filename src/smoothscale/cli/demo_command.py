"""`smoothscale demo`: see smoothscale work in a few minutes, with no cluster (`smoothscale.sandbox.demo`).

It starts an emulated API server, the kubelet stand-in (a real worker process per pod) and the operator,
applies an example StreamsApp, then scales out, scales in, swaps the hosts and crashes a pod, showing each
step live; it ends with a summary, a PNG timeline, and exit status 1 if any invariant broke. With `--kafka
--app-jar` every pod runs the user's own Kafka Streams app (`smoothscale.sandbox.app_process`); with `--kafka
--group-protocol streams` the sample app on the streams rebalance protocol, assigned by the brokers' plugin.
"""

from __future__ import annotations

import re
import shutil
import signal
import sys
import tempfile
from pathlib import Path
from types import FrameType
from typing import TYPE_CHECKING

import click

if TYPE_CHECKING:
    from smoothscale.sandbox.demo_kafka import InputTopic


_NAME = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?")
_NAME_MAX = 50
"""Pod names are `<app>-<ordinal>`, DNS labels of at most 63 characters."""
_STREAMS_NAME_MAX = 27
"""On the streams protocol each pod's name is a client tag's value, which Kafka Streams caps at 30
characters (`<app>-<ordinal>`, two digits in the demo's walk)."""


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
    "--group-protocol",
    type=click.Choice(["classic", "streams"]),
    default="classic",
    show_default=True,
    help="With --kafka: the app's group.protocol. streams (KIP-1071): the brokers load smoothscale's streams "
    "assignor (bridge/broker-assignor) and assign the operator's plan; the demo reads every pod's tasks from "
    "Kafka's view of the group and fails unless it is the plan at each step. The sample app runs Kafka "
    "Streams 4.4.0 without the bridge; your own (--app-jar) sets group.protocol=streams and the client tags "
    "client.tag.smoothscale.app (SMOOTHSCALE_APP) and client.tag.smoothscale.pod (SMOOTHSCALE_POD_NAME) "
    "itself, e.g. from --app-env.",
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
@click.option(
    "--app-jar",
    "app_jars",
    multiple=True,
    type=click.Path(dir_okay=False, exists=True, readable=True, path_type=Path),
    help="With --kafka: run your own Kafka Streams app as every pod's process. Repeat for more jars: they go "
    "on the class path in this order, the bridge's jar after them unless one holds it.",
)
@click.option(
    "--app-name",
    default=None,
    metavar="NAME",
    help=f"With --app-jar: the StreamsApp's name, which is your app's application.id (every pod gets it as "
    f"SMOOTHSCALE_APP; its pods are NAME-0, NAME-1...): a DNS label of at most {_NAME_MAX} characters "
    f"({_STREAMS_NAME_MAX} with --group-protocol streams) [default: orders].",
)
@click.option(
    "--app-main",
    default=None,
    metavar="CLASS",
    help="With --app-jar: the app's main class [default: the first jar runs with java -jar].",
)
@click.option(
    "--input",
    "inputs",
    multiple=True,
    metavar="TOPIC:PARTITIONS[:RECORDS_PER_S]",
    callback=lambda _ctx, _param, values: [_input_topic(value) for value in values],
    help="With --app-jar: an input topic to create (partition p in zone p mod 3) and feed with keyed string "
    "records (key order-<n>, value customer-<n mod 10>:<amount>) [default rate: 10 a second]. Repeatable.",
)
@click.option(
    "--app-env",
    multiple=True,
    metavar="NAME=VALUE",
    callback=lambda _ctx, _param, values: [_variable(value) for value in values],
    help="With --app-jar: a variable of every pod's environment (how the app gets its settings), after the "
    "operator's: VALUE may refer to them and to earlier ones as a pod template does, "
    "STATE=$(SMOOTHSCALE_STATE_DIR)/app ($$ is a $). Repeatable.",
)
@click.option(
    "--real-node",
    "node_bin",
    type=click.Path(file_okay=False, exists=True, path_type=Path),
    default=None,
    help="Run on a real node instead (root only): the control plane from --kube-bin, containerd, runc and "
    "a kubelet from this folder (the one `bash tools/node/build.sh` prints, built once), the operator "
    "installed with `helm install` of --chart, the sample worker's pods in containers: 3 pods, 6, 3, a "
    "swap to a new pod template, a container killed, a pod deleted with a grace period (docs/real-node.md).",
)
@click.option(
    "--node-images",
    type=click.Path(dir_okay=False, exists=True, path_type=Path),
    default=None,
    help="With --real-node: the image archive `bash tools/node/images.sh` prints last.",
)
@click.option(
    "--helm",
    type=click.Path(dir_okay=False, exists=True, path_type=Path),
    default=None,
    help="With --real-node: the helm binary [default: helm on the PATH; python .ci/kube_tools.py gets one].",
)
@click.option(
    "--chart",
    type=click.Path(file_okay=False, exists=True, path_type=Path),
    default=None,
    help="With --real-node: the Helm chart to install [default: charts/smoothscale, from the repository].",
)
@click.option(
    "--history",
    type=click.IntRange(min=0),
    default=0,
    show_default=True,
    metavar="RECORDS",
    help="With --kafka (the sample app): put this many records in each partition of the app's changelogs "
    "before it starts, as an app's that has run for a while: its pods then restore real stores and a "
    "scale-out's new pods warm up before their tasks move, with progress and an ETA in the status.",
)
@click.option(
    "--json",
    "json_figures",
    is_flag=True,
    help="End with one JSON object: per step settled_s, moved, handover_p50_s, handover_max_s, fallbacks, "
    "plan_matches_kafka, balanced.",
)
def demo_command(
    output_dir: Path | None,
    speed: float,
    keep: bool,
    api_port: int,
    kafka: bool,
    group_protocol: str,
    kube_bin: Path | None,
    app_jars: tuple[Path, ...],
    app_name: str | None,
    app_main: str | None,
    inputs: list[InputTopic],
    app_env: list[tuple[str, str]],
    node_bin: Path | None,
    node_images: Path | None,
    helm: Path | None,
    chart: Path | None,
    history: int,
    json_figures: bool,
) -> None:
    """Run the operator on an emulated cluster (or a real API server: --kube-bin) through scale-out,
    scale-in, a host swap and a pod crash."""
    # Imported here so that `smoothscale --help` does not load the operator, kopf or matplotlib.
    from smoothscale.sandbox.app_process import AppJarError, AppProcess  # noqa: PLC0415
    from smoothscale.sandbox.demo import APP  # noqa: PLC0415
    from smoothscale.sandbox.demo_kafka import OwnApp  # noqa: PLC0415
    from smoothscale.sandbox.demo_main import run_demo  # noqa: PLC0415

    streams_protocol = group_protocol == "streams"
    if streams_protocol and (not kafka or node_bin is not None):
        raise click.UsageError(
            "--group-protocol streams runs the app on real brokers: it needs --kafka, and not --real-node"
        )
    if history and (not kafka or app_jars or node_bin is not None):
        raise click.UsageError(
            "--history fills the sample app's changelogs on the demo's brokers: it needs --kafka, and "
            "neither --app-jar (your app's stores are its own) nor --real-node"
        )
    own_app = None
    if app_jars:
        if not kafka:
            raise click.UsageError("--app-jar needs --kafka: your app runs against the demo's real brokers")
        topics = [i.topic for i in inputs]
        if len(set(topics)) != len(topics):
            raise click.BadParameter(f"a topic is given twice: {sorted(topics)}", param_hint="'--input'")
        process = AppProcess(tuple(app_jars), app_main)
        try:
            process.check()
        except AppJarError as error:
            raise click.BadParameter(str(error), param_hint="'--app-jar'") from error
        name = _app_name(app_name or APP, streams_protocol)
        own_app = OwnApp(process, tuple(inputs), dict(app_env), name)
    else:
        own = (
            (app_name, "--app-name"),
            (app_main, "--app-main"),
            (inputs, "--input"),
            (app_env, "--app-env"),
        )
        for given, option in own:
            if given:
                raise click.UsageError(f"{option} needs --app-jar (and --kafka): it describes your own app")

    directory = output_dir or Path(tempfile.mkdtemp(prefix="smoothscale-demo-"))
    if node_bin is not None:
        sys.exit(_real_node_demo(directory, node_bin, kube_bin, node_images, helm, chart, kafka or keep))

    def stop(signum: int, _: FrameType | None) -> None:
        raise SystemExit(128 + signum)  # unwinds the sandbox: every process it started is stopped

    signal.signal(signal.SIGTERM, stop)
    exit_code = run_demo(
        directory,
        sys.stdout,
        speed=speed,
        keep=keep,
        api_port=api_port,
        kafka=kafka,
        kube_bin=kube_bin,
        own_app=own_app,
        streams_protocol=streams_protocol,
        json_figures=json_figures,
        history=history,
    )
    sys.exit(exit_code)


def _real_node_demo(
    directory: Path,
    node_bin: Path,
    kube_bin: Path | None,
    images: Path | None,
    helm: Path | None,
    chart: Path | None,
    unsupported: bool,
) -> int:
    from smoothscale.sandbox.demo import ProgressView  # noqa: PLC0415
    from smoothscale.sandbox.real_node_demo import run_real_node_demo  # noqa: PLC0415

    if unsupported:
        raise click.UsageError("--real-node runs the sample worker's walk only: without --kafka and --keep")
    if kube_bin is None:
        raise click.UsageError("--real-node needs --kube-bin (the folder `bash tools/kube/build.sh` prints)")
    if images is None:
        raise click.UsageError(
            "--real-node needs --node-images (the archive `bash tools/node/images.sh` prints)"
        )
    chart = chart or Path("charts/smoothscale")
    if not (chart / "Chart.yaml").is_file():
        raise click.UsageError(f"--real-node needs the chart: no {chart}/Chart.yaml here, give --chart")
    found = helm or shutil.which("helm")
    if found is None:
        raise click.UsageError(
            "--real-node needs helm: --helm, or helm on the PATH (python .ci/kube_tools.py)"
        )
    return run_real_node_demo(
        directory,
        sys.stdout,
        kube_bin=kube_bin,
        node_bin=node_bin,
        images=images,
        helm=Path(found),
        chart=chart,
        view=ProgressView(sys.stdout),
    )


def _input_topic(text: str) -> InputTopic:
    from smoothscale.sandbox.demo_kafka import InputTopic  # noqa: PLC0415

    try:
        return InputTopic.parse(text)
    except ValueError as error:
        raise click.BadParameter(str(error), param_hint="'--input'") from error


def _app_name(name: str, streams_protocol: bool) -> str:
    longest = _STREAMS_NAME_MAX if streams_protocol else _NAME_MAX
    if not _NAME.fullmatch(name) or len(name) > longest:
        on_streams = " on the streams protocol" if streams_protocol else ""
        raise click.BadParameter(
            f"{name!r} is not a name for the StreamsApp: lower-case letters, digits and '-', starting and "
            f"ending with a letter or digit, at most {longest} characters{on_streams} (shop-orders)",
            param_hint="'--app-name'",
        )
    return name


def _variable(text: str) -> tuple[str, str]:
    name, equals, value = text.partition("=")
    if not equals or not name or not name.replace("_", "a").isalnum() or name[0].isdigit():
        raise click.BadParameter(
            f"{text!r} is not NAME=VALUE with NAME made of letters, digits and _ (ORDERS_TOPIC=orders)",
            param_hint="'--app-env'",
        )
    return name, value
