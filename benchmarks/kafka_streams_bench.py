"""Head-to-head on one real broker: the sample Kafka Streams app scaled out from 3 to 6 instances,
(a) with Kafka Streams' own assignor (its defaults, except probing.rebalance.interval.ms at its minimum of
60 s), then (b) with the bridge following the publications of the operator's own decision path: the control
core (`smoothscale.control`: when to plan, the planner's input, what to publish for
`spec.runtime: KafkaStreams`) through the simulator's adapter to it, fed each round (`--scrape-interval`)
with the instances' metrics, as the operator scrapes them. Both sides' instances are started the same way
by the benchmark (the operator's own run of such pods, through the sandbox's kubelet stand-in, is
`tests/bridge/test_bridge_operator.py`).

Both runs use the same app, topics of the same size and the same amount of state (by default 100,000
changelog records per task and store: restoring all of it takes tens of seconds here). Per run it reports
the time from starting the new instances to a balanced assignment in Kafka's own view of the group (every
instance within one active task of every other; for (b) also the plan final, published and run by every
pod), the rebalances Kafka ran, the records restored by tasks that were active (so not processing
meanwhile), and every moved task's pause: from "Suspended from RUNNING" on its old owner to "Restored and
ready to run" on its new one, both from the instances' own logs (millisecond stamps), with the longest one
broken down by phase (`pause_breakdown`). The last line is one JSON object.

    python benchmarks/kafka_streams_bench.py [--partitions 6] [--orders 600000] [--scrape-interval 1]

Kafka's assignor moves a task to a new instance at once when the instance is within
acceptable.recovery.lag (10,000 records) of it, and otherwise warms it up first (two at a time) and moves
it at a later rebalance: a probing one, or any other that happens to come after the warmup caught up (each
move's own follow-up rebalance is one, about 3 s later with Kafka's heartbeat interval: with little state,
warmups catch up within that chain and Kafka balances without probing).
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import tempfile
import time
from collections.abc import Mapping
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import kubernetes
from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient

from smoothscale.assignor.models import Client, PlannerConfig, Snapshot, Task
from smoothscale.assignor.planner import plan
from smoothscale.contract.publication import ClientAssignment, Publication
from smoothscale.sandbox.emulator import EmulatorThread
from smoothscale.sandbox.kafka.broker import KafkaCluster
from smoothscale.sandbox.kafka_streams import SampleApp, create_sample_topics
from smoothscale.simulation.operator_loop import AppSpec, Operator, PodReport
from smoothscale.simulation.strategies import Smoothscale

FIRST = [f"orders-{i}" for i in range(3)]
ALL = [f"orders-{i}" for i in range(6)]
STAMP = re.compile(r"^\[(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3})\] ")
TASK_EVENT = re.compile(r"task \[(\d+_\d+)\] (Suspended from RUNNING|Restored and ready to run)")
RESTORED = re.compile(r"Finished restoring changelog .* with a total number of (\d+) records")
ASSIGNED = re.compile(r"Assigned \d+ total tasks including")
# A task's input partition in the consumer's "Adding newly assigned partitions" line, by subtopology.
INPUT_PARTITION = {"0": r"orders-[a-z]+-{partition}", "1": r"by-customer-repartition-{partition}"}
TIMEOUT_S = 1200
DEAD_THREAD = "Shutting down unclean"
SPEC = AppSpec(replicas=len(ALL), revision="0")  # every pod the benchmark starts runs the one template
# A probing rebalance Kafka scheduled (an immediate follow-up after a revocation is "scheduled for" 1970).
PROBING = re.compile(r"Triggering the followup rebalance scheduled for (?!1970)")


def produce(bootstrap: str, topic: str, orders: int) -> None:
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 20, "log_level": 0})
    for index in range(orders):
        key, value = f"order-{index}".encode(), f"customer-{index}:{index % 7 + 1}".encode()
        while True:
            try:
                producer.produce(topic, key=key, value=value)
                break
            except BufferError:  # the local queue is full while a loaded broker catches up
                producer.poll(0.5)
        if index % 10_000 == 0:
            producer.poll(0)
    if producer.flush(120) != 0:
        raise RuntimeError("orders were not all acknowledged")


def wait_processed(app: SampleApp, topics: list[str], timeout: float = 900) -> float:
    """Wait until the app's group has committed the end of every partition of `topics` (the repartition
    topic's end moves while the input is processed, so it is read again each time); seconds taken."""
    admin = AdminClient({"bootstrap.servers": app.bootstrap, "log_level": 0})
    reader = Consumer({"bootstrap.servers": app.bootstrap, "group.id": app.app, "log_level": 0})
    started = time.monotonic()
    try:
        while time.monotonic() - started < timeout:
            metadata = admin.list_topics(timeout=30).topics
            if all(topic in metadata for topic in topics):
                partitions = [TopicPartition(t, p) for t in topics for p in metadata[t].partitions]
                ends = [reader.get_watermark_offsets(tp, timeout=30)[1] for tp in partitions]
                committed = reader.committed(partitions, timeout=30)
                if all(tp.offset >= end for tp, end in zip(committed, ends, strict=True)):
                    return time.monotonic() - started
            time.sleep(2)
    finally:
        reader.close()
    raise TimeoutError(f"{app.app} did not process its input within {timeout} s")


def balanced(view: Mapping[str, set[str]], tasks: int) -> bool:
    counts = [len(view.get(pod, set())) for pod in ALL]
    return sum(counts) == tasks and max(counts) - min(counts) <= 1


def tasks_of(partitions: int, ends: Mapping[str, int]) -> list[Task]:
    """Both subtopologies' tasks, each as many changelog records behind as its largest end offset seen."""
    ids = [f"{s}_{p}" for s in (0, 1) for p in range(partitions)]
    return [Task(id=t, subtopology=t.split("_")[0], changelog_offsets=ends.get(t, 0)) for t in ids]


class Scrape:
    """What the operator sees of the instances in one round: each pod's metrics, read once (the control
    core's `View`). A pod is running for the operator once it reports a generation: it follows its
    assignment (docs/handover.md), as the kubelet stand-in counts a pod ready only then."""

    def __init__(self, app: SampleApp) -> None:
        self.samples = {pod: instance.metrics() for pod, instance in app.instances.items()}

    def series(self, pod: str, name: str) -> dict[str, int]:
        prefix = f'{name}{{task="'
        samples = self.samples[pod].items()
        return {k.split('"')[1]: int(v) for k, v in samples if k.startswith(prefix)}

    def generation(self, pod: str) -> int | None:
        value = self.samples[pod].get("smoothscale_assignment_generation")
        return None if value is None else int(value)

    def listed_pods(self) -> list[PodReport]:
        return [
            PodReport(pod, "zone-a", None, -1 if generation is None else generation, 0, ready=ready)
            for pod in self.samples
            for generation in [self.generation(pod)]
            for ready in [generation is not None]
        ]

    def running_pods(self) -> list[PodReport]:
        return [pod for pod in self.listed_pods() if pod.ready]

    def lags(self, pod: str) -> dict[str, int]:
        return self.series(pod, "smoothscale_task_lag")

    def changelog_ends(self) -> dict[str, int]:
        ends: dict[str, int] = {}
        for pod in self.samples:
            for task, end in self.series(pod, "smoothscale_task_changelog_end_offset").items():
                ends[task] = max(ends.get(task, 0), end)
        return ends


def log_events(app: SampleApp, since: datetime) -> list[tuple[datetime, str, str]]:
    """(time, pod, line) of every log line of every instance from `since` on, in time order."""
    events = []
    for pod, instance in app.instances.items():
        for line in instance.log.read_text(errors="replace").splitlines():
            stamp = STAMP.match(line)
            if stamp is not None:
                at = datetime.strptime(stamp.group(1), "%Y-%m-%d %H:%M:%S,%f")
                if at >= since:
                    events.append((at, pod, line))
    return sorted(events)


def pause_breakdown(
    events: list[tuple[datetime, str, str]], stopped: datetime, old: str, new: str, task: str, ready: datetime
) -> dict[str, float]:
    """Where one moved task's pause went, from both owners' logs (seconds): `revoke` (the old owner's
    suspend, EOS commit and close), `join` (the follow-up rebalance's JoinGroup, until the new owner is a
    member of it: it waits for every member), `sync` (SyncGroup and the assignment reaching the new owner),
    `init` (the new owner creates the task: producer, stores), `restore` (the changelog tail and the switch
    to RUNNING, which fetches the committed offsets)."""
    subtopology, partition = task.split("_")
    topic_partition = INPUT_PARTITION[subtopology].format(partition=partition)

    def first(pod: str, pattern: re.Pattern[str] | str, after: datetime) -> datetime:
        for at, who, line in events:
            if who == pod and at >= after and at <= ready and re.search(pattern, line):
                return at
        return ready

    def last(pod: str, text: str, after: datetime, before: datetime) -> datetime:
        return max(
            (at for at, who, line in events if who == pod and after <= at <= before and text in line),
            default=before,
        )

    closed = first(old, rf"task \[{task}\] Closed clean", stopped)
    assigned = first(new, rf"Adding newly assigned partitions: \[[^]]*{topic_partition}\b", closed)
    synced = last(new, "Successfully synced group", closed, assigned)
    joined = last(new, "Successfully joined group", closed, synced)
    initialized = first(new, rf"task \[{task}\] Initialized", assigned)
    restored = first(new, rf"Stateful active task {task} completed restoration", initialized)
    return {
        "revoke": (closed - stopped).total_seconds(),
        "join": (joined - closed).total_seconds(),
        "sync": (synced - joined).total_seconds(),
        "recycle": (assigned - synced).total_seconds(),
        "init": (initialized - assigned).total_seconds(),
        "restore": (restored - initialized).total_seconds(),
        "to_running": (ready - restored).total_seconds(),
    }


def log_figures(app: SampleApp, since: datetime) -> dict[str, Any]:
    """Rebalances, records restored by active tasks, and every moved task's pause (with its breakdown, see
    `pause_breakdown`), from the instances' own logs."""
    rebalances = restored = probing = 0
    events = log_events(app, since)
    stopped: dict[str, tuple[datetime, str]] = {}
    pauses: list[tuple[float, dict[str, float]]] = []
    for at, pod, line in events:
        rebalances += bool(ASSIGNED.search(line))
        probing += bool(PROBING.search(line))
        if found := RESTORED.search(line):
            restored += int(found.group(1))
        if found := TASK_EVENT.search(line):
            task, kind = found.group(1), found.group(2)
            if kind.startswith("Suspended"):
                stopped.setdefault(task, (at, pod))
            elif task in stopped:
                since_stop, old = stopped.pop(task)
                parts = pause_breakdown(events, since_stop, old, pod, task, at)
                pauses.append(((at - since_stop).total_seconds(), parts))
    longest = max(pauses, key=lambda pause: pause[0], default=(0.0, {}))
    return {
        "rebalances": rebalances,
        "probing_rebalances": probing,
        "records_restored": restored,
        "moved_tasks": len(pauses),
        "longest_pause_s": round(longest[0], 2),
        "longest_pause_parts_s": {name: round(value, 2) for name, value in longest[1].items()},
        "pauses_s": sorted(round(pause, 2) for pause, _ in pauses),
    }


def check_alive(app: SampleApp, started: float) -> None:
    """Fail the run, naming the pod, when an instance exited or lost its stream thread (it then holds up
    every rebalance of the group until max.poll.interval.ms); or when the run takes too long."""
    if time.monotonic() - started > TIMEOUT_S:
        raise TimeoutError(f"no balanced assignment within {TIMEOUT_S} s")
    for pod, instance in app.instances.items():
        if instance.process.poll() is not None or DEAD_THREAD in instance.log.read_text(errors="replace"):
            raise RuntimeError(f"{pod}'s Kafka Streams client failed: see {instance.log}")


def drive_kafka(app: SampleApp, tasks: int, started: float) -> None:
    """Kafka Streams' own assignor: wait until its view of the group is balanced."""
    while not balanced(app.kafka_view(), tasks):
        check_alive(app, started)
        time.sleep(0.5)


def drive_smoothscale(
    app: SampleApp,
    api: Any,
    first: Publication,
    partitions: int,
    started: float,
    scrape_interval: float,
) -> int:
    """The operator's decision path (`smoothscale.control`, through the simulator's adapter to it)
    on what the instances' metrics show, one round per `scrape_interval`, until the plan is final, fully
    published and run by every pod, and Kafka's view of the group is balanced; the generations published."""
    scrape = Scrape(app)
    operator = Operator(
        Smoothscale(),
        PlannerConfig(),
        tasks_of(partitions, scrape.changelog_ends()),
        datetime.now(UTC) - timedelta(seconds=time.monotonic() - started),
        app.app,
        kafka_rebalances=True,
    )
    operator.published = first  # the pods run it: the first round plans from it, as after a restart
    while not (operator.at_rest(scrape, SPEC) and balanced(app.kafka_view(), 2 * partitions)):
        check_alive(app, started)
        now = time.monotonic() - started
        woken = operator.round(now, scrape, SPEC)
        if woken.publication is not None:
            app.publish(api, woken.publication)
            moved = sum(
                len(set(roles.active) - set(first.assignment.get(pod, ClientAssignment()).active))
                for pod, roles in woken.publication.assignment.items()
            )
            first = woken.publication  # what the next generation's moves are counted against
            print(
                f"[smoothscale] +{now:.1f} s generation {first.generation} ({woken.plan_reason}):"
                f" {sum(len(r.warmup) for r in first.assignment.values())} warmups, {moved} actives moved",
                file=sys.stderr,
            )
        time.sleep(max(0.0, scrape_interval - (time.monotonic() - started - now)))
        scrape = Scrape(app)
    generation: int = first.generation
    return generation


def run(
    mode: str,
    cluster: KafkaCluster,
    kubeconfig: Path,
    work: Path,
    args: argparse.Namespace,
) -> dict[str, Any]:
    bootstrap, partitions = cluster.bootstrap_servers, args.partitions
    orders_topic, totals_topic = create_sample_topics(bootstrap, mode, partitions)
    produce(bootstrap, orders_topic, args.orders)
    env = {
        "ORDERS_TOPIC": orders_topic,
        "TOTALS_TOPIC": totals_topic,
        "STREAMS_PROBING_REBALANCE_INTERVAL_MS": "60000",
    }
    app = SampleApp(f"bench-{mode}", "default", bootstrap, kubeconfig, work / mode, env)
    api = kubernetes.client.CoreV1Api(kubernetes.config.new_client_from_config(str(kubeconfig)))
    bridged = mode == "smoothscale"
    newcomers = Snapshot(
        now=datetime.now(UTC),
        tasks=tasks_of(partitions, {}),
        clients=[Client(id=p, rack="zone-a") for p in FIRST],
    )
    first = Publication(generation=1, assignment=plan(newcomers).assignment)
    try:
        if bridged:
            app.publish(api, first)
        for pod in FIRST:
            app.start(pod, bridged=bridged)
        processing = wait_processed(app, [orders_topic, f"{app.app}-by-customer-repartition"])
        print(f"[{mode}] 3 instances processed {args.orders} orders in {processing:.0f} s", file=sys.stderr)
        since = datetime.now()
        started = time.monotonic()
        for pod in ALL[3:]:
            app.start(pod, bridged=bridged)
        figures: dict[str, Any] = {}
        if bridged:
            figures["generations"] = drive_smoothscale(
                app, api, first, partitions, started, args.scrape_interval
            )
        else:
            drive_kafka(app, 2 * partitions, started)
        seconds = time.monotonic() - started
        print(f"[{mode}] balanced {seconds:.1f} s after the scale-out", file=sys.stderr)
        return {"balance_s": round(seconds, 1), **figures, **log_figures(app, since)}
    finally:
        app.stop_all()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--partitions", type=int, default=6, help="input partitions (tasks per subtopology)")
    parser.add_argument("--orders", type=int, default=600_000, help="orders, each a new key in both stores")
    parser.add_argument(
        "--scrape-interval", type=float, default=1.0, help="the operator's --scrape-interval (seconds)"
    )
    parser.add_argument("--keep", type=Path, help="a work folder to keep (the instances' logs)")
    parser.add_argument("--only", choices=["smoothscale"], help="run one side (its figures only)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="kafka-streams-bench-") as tmp:
        work = args.keep or Path(tmp)
        with KafkaCluster(work / "kafka", work / "kafka-logs") as cluster, EmulatorThread() as emulator:
            if args.only:
                print(json.dumps(run(args.only, cluster, emulator.kubeconfig, work, args)))
                return
            kafka = run("kafka", cluster, emulator.kubeconfig, work, args)
            smooth = run("smoothscale", cluster, emulator.kubeconfig, work, args)
    for name, figures in (("kafka", kafka), ("smoothscale", smooth)):
        print(f"[{name}] pauses (s): {figures.pop('pauses_s')}", file=sys.stderr)
    result = {
        "tasks": 2 * args.partitions,
        "orders": args.orders,
        "smoothscale_scrape_interval_s": args.scrape_interval,
        **{f"kafka_{name}": value for name, value in kafka.items()},
        # each probing round waits the default 600 s instead of 60 s
        "kafka_balance_at_default_probing_s_estimate": kafka["balance_s"]
        + kafka["probing_rebalances"] * (600 - 60),
        **{f"smoothscale_{name}": value for name, value in smooth.items()},
        "balance_speedup_x": round(kafka["balance_s"] / max(smooth["balance_s"], 0.1), 1),
    }
    print(json.dumps(result))


if __name__ == "__main__":
    main()
