"""Head-to-head on one real broker: the sample Kafka Streams app scaled out from 3 to 6 instances,
(a) with Kafka Streams' own assignor (its defaults, except probing.rebalance.interval.ms at its minimum of
60 s), then (b) with the bridge following publications made by smoothscale's planner from the instances'
metrics (the planning and publishing the operator does, run in this process: the operator cannot start
Java pods in the sandbox yet).

Both runs use the same app, topics of the same size and the same amount of state. Per run it reports the
time from starting the new instances to a balanced assignment in Kafka's own view of the group (every
instance within one active task of every other; for (b) also the plan stable), the rebalances Kafka ran,
the records restored by tasks that were active (so not processing meanwhile), and the longest processing
pause of any task: from "Suspended from RUNNING" on its old owner to "Restored and ready to run" on its
new one, both read from the instances' own logs. The last line is one JSON object.

    python benchmarks/kafka_streams_bench.py [--partitions 6] [--orders 78000]

Kafka's assignor moves a task to a new instance at once when the instance is within
acceptable.recovery.lag (10,000 records) of it, and otherwise warms it up first (two at a time) and moves
it at a probing rebalance: the defaults give each task more changelog records than that.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import tempfile
import time
from collections.abc import Mapping
from datetime import UTC, datetime
from pathlib import Path

import kubernetes
from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient

from smoothscale.assignor.handover import Publication
from smoothscale.assignor.models import Client, ClientAssignment, PlannerConfig, Snapshot, Task
from smoothscale.assignor.planner import plan
from smoothscale.sandbox.emulator import EmulatorThread
from smoothscale.sandbox.kafka.broker import KafkaCluster
from smoothscale.sandbox.kafka_streams import SampleApp, create_topics

FIRST = [f"orders-{i}" for i in range(3)]
ALL = [f"orders-{i}" for i in range(6)]
STAMP = re.compile(r"^\[(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3})\] ")
TASK_EVENT = re.compile(r"task \[(\d+_\d+)\] (Suspended from RUNNING|Restored and ready to run)")
RESTORED = re.compile(r"Finished restoring changelog .* with a total number of (\d+) records")
ASSIGNED = re.compile(r"Assigned \d+ total tasks including")
# A probing rebalance Kafka scheduled (an immediate follow-up after a revocation is "scheduled for" 1970).
PROBING = re.compile(r"Triggering the followup rebalance scheduled for (?!1970)")


def produce(bootstrap: str, topic: str, orders: int) -> None:
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 20, "log_level": 0})
    for index in range(orders):
        producer.produce(
            topic, key=f"order-{index}".encode(), value=f"customer-{index}:{index % 7 + 1}".encode()
        )
        if index % 10_000 == 0:
            producer.poll(0)
    if producer.flush(60) != 0:
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


def snapshot(app: SampleApp, published: Publication, partitions: int) -> Snapshot | None:
    """What the operator would know: every instance's lag per task, and what is published; None when an
    instance that holds tasks cannot be scraped (as the operator, plan only on complete information)."""
    lags: dict[str, dict[str, int]] = {}
    ends: dict[str, int] = {}
    for pod, instance in app.instances.items():
        samples = instance.metrics()
        held = published.assignment.get(pod, ClientAssignment())
        if not samples and (held.active or held.standby or held.warmup):
            return None
        lags[pod] = {}
        for series, value in samples.items():
            if series.startswith('smoothscale_task_lag{task="'):
                lags[pod][series.split('"')[1]] = int(value)
            elif series.startswith('smoothscale_task_changelog_end_offset{task="'):
                task = series.split('"')[1]
                ends[task] = max(ends.get(task, 0), int(value))
    clients = []
    for pod in app.instances:
        held = published.assignment.get(pod, ClientAssignment())
        clients.append(
            Client(
                id=pod,
                rack="zone-a",
                lags=lags[pod],
                active=held.active,
                standby=held.standby,
                warmup=held.warmup,
            )
        )
    return Snapshot(
        now=datetime.now(UTC), config=PlannerConfig(), tasks=tasks_of(partitions, ends), clients=clients
    )


def log_figures(app: SampleApp, since: datetime) -> dict[str, float]:
    """Rebalances, records restored by active tasks, and the longest task pause, from the instances' logs."""
    rebalances = restored = probing = 0
    events: list[tuple[datetime, str, str]] = []
    for instance in app.instances.values():
        for line in instance.log.read_text(errors="replace").splitlines():
            stamp = STAMP.match(line)
            if stamp is None:
                continue
            at = datetime.strptime(stamp.group(1), "%Y-%m-%d %H:%M:%S,%f")
            if at < since:
                continue
            if ASSIGNED.search(line):
                rebalances += 1
            if PROBING.search(line):
                probing += 1
            if found := RESTORED.search(line):
                restored += int(found.group(1))
            if found := TASK_EVENT.search(line):
                events.append((at, found.group(1), found.group(2)))
    longest = 0.0
    stopped: dict[str, datetime] = {}
    for at, task, kind in sorted(events):
        if kind.startswith("Suspended"):
            stopped.setdefault(task, at)
        elif task in stopped:
            longest = max(longest, (at - stopped.pop(task)).total_seconds())
    return {
        "rebalances": rebalances,
        "probing_rebalances": probing,
        "records_restored": restored,
        "longest_pause_s": round(longest, 2),
    }


def run(
    mode: str, cluster: KafkaCluster, kubeconfig: Path, work: Path, partitions: int, orders: int
) -> dict[str, float]:
    bootstrap = cluster.bootstrap_servers
    orders_topic, totals_topic = f"orders-{mode}", f"totals-{mode}"
    create_topics(bootstrap, {orders_topic: partitions, totals_topic: partitions})
    produce(bootstrap, orders_topic, orders)
    env = {
        "ORDERS_TOPIC": orders_topic,
        "TOTALS_TOPIC": totals_topic,
        "STREAMS_PROBING_REBALANCE_INTERVAL_MS": "60000",
    }
    app = SampleApp(f"bench-{mode}", "default", bootstrap, kubeconfig, work / mode, env)
    api = kubernetes.client.CoreV1Api(kubernetes.config.new_client_from_config(str(kubeconfig)))
    bridged = mode == "smoothscale"
    published = Publication(generation=0)
    tasks = 2 * partitions
    try:
        if bridged:
            newcomers = Snapshot(
                now=datetime.now(UTC),
                tasks=tasks_of(partitions, {}),
                clients=[Client(id=p, rack="zone-a") for p in FIRST],
            )
            published = Publication(generation=1, assignment=plan(newcomers).assignment)
            app.publish(api, published)
        for pod in FIRST:
            app.start(pod, bridged=bridged)
        processing = wait_processed(app, [orders_topic, f"{app.app}-by-customer-repartition"])
        print(f"[{mode}] 3 instances processed {orders} orders in {processing:.0f} s", file=sys.stderr)
        since = datetime.now()
        started = time.monotonic()
        for pod in ALL[3:]:
            app.start(pod, bridged=bridged)
        deadline = started + 1200
        while time.monotonic() < deadline:
            stable = True
            if bridged:
                known = snapshot(app, published, partitions)
                planned = None if known is None else plan(known)
                stable = planned is not None and planned.stable
                if planned is not None and planned.assignment != published.assignment:
                    published = Publication(
                        generation=published.generation + 1, assignment=planned.assignment
                    )
                    app.publish(api, published)
                    print(
                        f"[{mode}] +{time.monotonic() - started:.1f} s generation {published.generation}:"
                        f" {planned.stats.warmups} warmups, {planned.stats.moved_actives} actives moved",
                        file=sys.stderr,
                    )
            if stable and balanced(app.kafka_view(), tasks):
                break
            time.sleep(0.5)
        else:
            raise TimeoutError(f"[{mode}] no balanced assignment within 20 minutes")
        seconds = time.monotonic() - started
        print(f"[{mode}] balanced {seconds:.1f} s after the scale-out", file=sys.stderr)
        return {"balance_s": round(seconds, 1), **log_figures(app, since)}
    finally:
        app.stop_all()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--partitions", type=int, default=6, help="input partitions (tasks per subtopology)")
    parser.add_argument("--orders", type=int, default=78_000, help="orders, each a new key in both stores")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="kafka-streams-bench-") as tmp:
        work = Path(tmp)
        with KafkaCluster(work / "kafka", work / "kafka-logs") as cluster, EmulatorThread() as emulator:
            kafka = run("kafka", cluster, emulator.kubeconfig, work, args.partitions, args.orders)
            smooth = run("smoothscale", cluster, emulator.kubeconfig, work, args.partitions, args.orders)
    print(
        json.dumps(
            {
                "tasks": 2 * args.partitions,
                "orders": args.orders,
                "kafka_balance_s": kafka["balance_s"],
                "kafka_rebalances": kafka["rebalances"],
                "kafka_records_restored": kafka["records_restored"],
                "kafka_longest_pause_s": kafka["longest_pause_s"],
                "kafka_probing_rebalances": kafka["probing_rebalances"],
                # each probing round waits the default 600 s instead of 60 s
                "kafka_balance_at_default_probing_s_estimate": kafka["balance_s"]
                + kafka["probing_rebalances"] * (600 - 60),
                "smoothscale_balance_s": smooth["balance_s"],
                "smoothscale_rebalances": smooth["rebalances"],
                "smoothscale_records_restored": smooth["records_restored"],
                "smoothscale_longest_pause_s": smooth["longest_pause_s"],
                "balance_speedup_x": round(kafka["balance_s"] / max(smooth["balance_s"], 0.1), 1),
            }
        )
    )


if __name__ == "__main__":
    main()
