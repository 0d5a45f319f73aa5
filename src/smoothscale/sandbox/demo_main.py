"""The whole of `smoothscale demo`: start the sandbox, walk the steps, report, clean up (or keep it)."""

from __future__ import annotations

import contextlib
import json
import signal
import threading
from collections.abc import Iterator
from functools import partial
from pathlib import Path
from typing import TextIO

from smoothscale.contract import shared_names as contract
from smoothscale.resource.crd import crd_yaml

from .addresses import port_free
from .app_process import AppProcess
from .background import running
from .control_plane import Binaries, ControlPlane, RunningControlPlane
from .demo import APP, LEASE_SECONDS, ProgressView, Walkthrough, demo_app, worker_env
from .demo_kafka import (
    ORDERS,
    OrderFeed,
    OwnApp,
    classic_plan_differs,
    demo_kafka,
    fill_changelogs,
    kafka_checks,
    kafka_streams_app,
    kafka_summary,
    own_streams_app,
    sample_topics,
)
from .group_view import GroupView
from .harness import Sandbox
from .kafka_streams import StreamsGroupWatch, streams_protocol_app
from .report import step_failures, step_figures, summary_table, timeline_png
from .streams_observe import StreamsGroupObserver


def run_demo(
    output_dir: Path,
    out: TextIO,
    *,
    speed: float = 1.0,
    keep: bool = False,
    api_port: int = 0,
    kube_bin: Path | None = None,
    kafka: bool = False,
    own_app: OwnApp | None = None,
    streams_protocol: bool = False,
    json_figures: bool = False,
    history: int = 0,
) -> int:
    """0 when every step settled and no invariant broke, else 1. Every process it started is stopped before
    it returns (with `keep`, only once SIGINT or SIGTERM arrives). With `kube_bin` (the folder
    `tools/kube/build.sh` fills) the demo runs on a real control plane of its own instead of the emulator
    (`api_port` is then not used). With `kafka`, the pods are real Kafka Streams instances of the Java sample
    app (or of the user's `own_app`) against three real brokers, one per zone, whose racks the operator reads
    (`demo_kafka`); `speed` then does not apply, and a step also fails when it ends unbalanced, with Kafka's
    view of the group other than the plan, or with a fallback of the bridge. With `streams_protocol` (and
    `kafka`) the brokers load smoothscale's streams assignor and the app (the sample on Kafka Streams 4.4.0,
    or the user's, configured for it by its own settings) runs `group.protocol=streams`: what each pod runs
    is read from Kafka's view of the group (`streams_observe`), and the sample's last check also wants the
    plugin as the group's assignor and every pod's standbys as planned. `history` (the sample on Kafka) puts
    that many records in each partition of its changelogs before it starts (`fill_changelogs`).
    `json_figures` ends the output with one JSON object of every step's figures (`report.step_figures`)."""
    first_address = _first_free_block()
    kafka = kafka or own_app is not None or streams_protocol
    name = APP if own_app is None else own_app.name
    with contextlib.ExitStack() as stack:
        topics = sample_topics() if own_app is None else {i.topic: i.partitions for i in own_app.inputs}
        spec_kafka = (
            stack.enter_context(
                demo_kafka(output_dir, out, topics, streams_protocol=streams_protocol, app=name)
            )
            if kafka
            else None
        )
        bootstrap = None if spec_kafka is None else str(spec_kafka["bootstrapServers"])
        if history and bootstrap is not None and own_app is None:
            out.write(f"filling each changelog partition of the app with {history:,} records...\n")
            out.flush()
            fill_changelogs(bootstrap, history)
        observer = None
        if streams_protocol and bootstrap is not None:
            # only the latest sample is read: a demo kept running (`keep`) holds no growing history
            watch = stack.enter_context(StreamsGroupWatch(bootstrap, [name], interval_ms=500, history=1))
            observer = StreamsGroupObserver(watch, name)
        pods_run: AppProcess | None = own_app.process if own_app is not None else None
        if pods_run is None and streams_protocol:
            pods_run = streams_protocol_app()
        api_server = None if kube_bin is None else stack.enter_context(_real_api_server(output_dir, kube_bin))
        sandbox = stack.enter_context(
            Sandbox(
                output_dir,
                worker_env=worker_env(speed),
                api_port=api_port,
                first_address=first_address,
                api_server=api_server,
                kafka_bootstrap=bootstrap,
                kafka_app=pods_run,
            )
        )
        assert sandbox.cluster is not None
        out.write(f"API server {sandbox.cluster.url}, kubeconfig {sandbox.kubeconfig}\n")
        if spec_kafka is None or bootstrap is None:
            app = demo_app(lease_seconds=LEASE_SECONDS)
            walkthrough = Walkthrough(sandbox, view=ProgressView(out), app=app)
            results = walkthrough.run()
        else:
            # JVMs start, restore and rebalance in tens of seconds on a loaded machine, not in seconds: a
            # crashed pod's JVM alone may take 20 s to start again.
            if own_app is None:
                app, rates = kafka_streams_app(spec_kafka), {ORDERS: 20}
            else:
                app = own_streams_app(spec_kafka, own_app)
                rates = {i.topic: i.rate for i in own_app.inputs}
            walkthrough = Walkthrough(
                sandbox,
                view=ProgressView(out),
                app=app,
                records=False,
                step_timeout=300,
                max_gap=60,
                sample_seconds=0.5,
                group_view=GroupView(bootstrap) if observer is None else observer,
                reports=None if observer is None else observer.reports,
            )
            feed = OrderFeed(bootstrap, rates)
            with running(feed.run, "record-feed"):
                results = walkthrough.run()
            if own_app is None:
                out.write(f"checking the totals of {feed.count} orders and Kafka's view of the group...\n")
                out.flush()
                publication = sandbox.publication(APP)
                differs = (
                    classic_plan_differs(bootstrap, output_dir / "kafka-reader", publication)
                    if observer is None
                    else partial(observer.differs, publication)
                )
                results[-1].violations += kafka_checks(bootstrap, feed.count, differs)
            for result in results:
                result.violations += step_failures(result)
        png = timeline_png(walkthrough.timeline, results, output_dir / "timeline.png")
        violations = [f"{result.name}: {text}" for result in results for text in result.violations]
        out.write("\n" + summary_table(results) + "\n")
        out.write(f"\ntimeline: {png}\nrecords: {sandbox.record_file}\njournal: {sandbox.journal_file}\n")
        for line in violations:
            out.write(f"VIOLATION {line}\n")
        if spec_kafka is not None:
            out.write(kafka_summary(sandbox.app(name).get("status") or {}) + "\n")
        out.write("all invariants held\n" if not violations else f"{len(violations)} invariant(s) broken\n")
        if json_figures:
            figures = {result.name: step_figures(result) for result in results}
            out.write(json.dumps({"steps": figures, "exit_status": 1 if violations else 0}) + "\n")
        out.flush()
        if keep:
            _wait_for_a_signal(out, sandbox.kubeconfig, name)
    return 1 if violations else 0


@contextlib.contextmanager
def _real_api_server(output_dir: Path, kube_bin: Path) -> Iterator[RunningControlPlane]:
    """etcd, kube-apiserver and kube-controller-manager from `kube_bin`, with the StreamsApp CRD installed."""
    with ControlPlane(output_dir / "control-plane", Binaries.from_folder(kube_bin)) as running:
        running.apply_crd(crd_yaml(), f"{contract.PLURAL}.{contract.GROUP}")
        yield running


def _wait_for_a_signal(out: TextIO, kubeconfig: Path, app: str) -> None:
    out.write(
        "\nThe sandbox keeps running. Try:\n"
        f"  export KUBECONFIG={kubeconfig}\n"
        f"  kubectl get sapp {app} -o wide\n"
        "  kubectl get pods -o wide\n"
        "  kubectl explain sapp.spec.scaling\n"
        f"  kubectl scale sapp {app} --replicas=5\n"
        f"  kubectl annotate pod {app}-3 smoothscale.io/leaving=true\n"
        "Ctrl-C (or SIGTERM) stops every process of it.\n"
    )
    out.flush()
    stop = threading.Event()
    for signum in (signal.SIGINT, signal.SIGTERM):
        signal.signal(signum, lambda *_: stop.set())
    stop.wait()


def _first_free_block() -> str:
    """127.0.0.2 and up, as the docs show, unless another sandbox on this machine already serves there."""
    return "127.0.0.2" if port_free("127.0.0.2", 8080) else "127.0.100.2"
