"""Chaos on real Kafka Streams (issue 25): the Java sample app (the smoothscale-streams bridge) under the real
operator in the sandbox, through a sequence of faults, each followed by new orders and a wait until the app
has settled again (every pod ready, the operator's plan exactly Kafka's view of the group, balanced). The app
has no spec.topology: the operator plans with the one the bridge reports. `benchmarks/streams_chaos.py`
draws 100 faults from `KINDS`; a slow test runs a few.

Fault kinds (`KINDS`, with their weights in a drawn mix): `kill` (a pod's JVM SIGKILLed, restarted with its
state directory), `kill_lose_volume` (the same without it: state restored from the changelogs),
`broker_restart` (a rolling restart of the brokers), `operator_kill` (replicas changed, the operator
SIGKILLed two seconds into the migration and started again), `api_server_down` (replicas changed, then the
API server stopped two seconds into the migration, for a minute by default: connections refused, watches
broken; the operator, the kubelet stand-in and every pod's ConfigMap watch must come back by themselves),
`leader_cut_off` (the group leader's pod cut off from the API server, its packets dropped or its
connections refused, while the replicas change, so that the operator publishes plans the leader cannot
see), `scale` (replicas 3 <-> 4) and `swap` (every pod replaced, as `smoothscale swap` does).

Checked: after each fault, every record the input topic holds counted in the output (a settled group can
still be stalled); at the end, every record of the input topic counted exactly once in the output
(exactly-once; the expected totals are the input topic's, since a send the benchmark could not confirm may
have landed; amounts unique per order; every committed total grows), no task ever in
two pods' assignment in Kafka's view of the group (sampled every second), the final assignment balanced and
equal to the plan; rebalances led (`smoothscale_bridge_assignor_followed_total`) and fallbacks
(`smoothscale_bridge_assignor_fallbacks_total`, by reason) counted per fault kind from the pods' metrics
(a restarted pod's counters start again: its earlier counts are lost).
"""

from __future__ import annotations

import random
import re
import threading
import time
from collections import Counter, defaultdict
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from statistics import mean
from typing import Any

from confluent_kafka import OFFSET_BEGINNING, Consumer, KafkaException, TopicPartition

from smoothscale.control.object_names import RESTARTED_AT_ANNOTATION

from .api_links import Cut
from .background import running
from .harness import Sandbox
from .kafka.broker import KafkaCluster
from .kafka.topics import QUIET
from .kafka_streams import (
    SampleApp,
    latest_totals,
    produce_orders,
    read_committed,
    read_whole,
    totals_of,
    unique_order_value,
)
from .streams_app import assignor_counts, crash, settle, streams_app

APP = "chaos-shop"
PARTITIONS = 4
REPLICATION = 3
"""Replicas of every topic the app reads and writes (its input and output, and through
`STREAMS_REPLICATION_FACTOR` its changelogs and repartition topic): with one, a rolling restart takes each
partition offline in turn, and after one Kafka 4.3.1 kept a transaction open for good on two changelog
partitions (Admin `describeProducers`: an open transaction of a producer epoch its coordinator had long
completed): their last stable offset stuck, a task restoring from them never finished, and its orders went
uncounted while the group looked settled. Production runs exactly-once on replicated topics; so does the
benchmark."""
TASKS = 2 * PARTITIONS
ORDERS_PER_FAULT = 40
ACCEPTABLE_LAG = 5
KINDS = {
    "kill": 4,
    "kill_lose_volume": 2,
    "broker_restart": 1,
    "operator_kill": 1,
    "api_server_down": 1,
    "leader_cut_off": 1,
    "scale": 3,
    "swap": 1,
}
"""Every fault kind, with its weight in a drawn mix: the cheap ones (a JVM restarted, one pod more or less)
weigh most, since a rolling restart of three brokers took 4 minutes on 2 shared cores and a swap starts
every pod again."""
LEADER_LINE = re.compile(r"Finished assignment for group at generation (\d+)")


@dataclass(frozen=True)
class ChaosTimes:
    api_down_seconds: float = 60.0
    cut_seconds: float = 40.0
    """Longer than a plan's follow-up and a few probing rounds, shorter than the bridge's plan patience
    (2 min): the leader follows what it last saw."""
    settle_timeout: float = 600.0
    count_timeout: float = 180.0
    """How long after settling every input record may take to show in the output's totals."""
    broker_timeout: float = 600.0
    """How long a restarted broker may take to be back (under a load average of 35 on 2 cores one took
    over 120 s: the cluster's default)."""


def draw(rng: random.Random, faults: int, kinds: Sequence[str] = tuple(KINDS)) -> list[str]:
    """`faults` kinds drawn from `kinds` by their weights."""
    return rng.choices(list(kinds), [KINDS[kind] for kind in kinds], k=faults)


class DoubleActives:
    """Samples Kafka's view of the group every second; counts tasks seen in two pods' assignment at once."""

    def __init__(self, kafka: SampleApp) -> None:
        self.kafka = kafka
        self.seen: list[str] = []
        self.samples = 0

    def watch(self, stop: threading.Event) -> None:
        while not stop.wait(1.0):
            try:
                view = self.kafka.kafka_view()
            except (KafkaException, TimeoutError):
                continue
            self.samples += 1
            owners = Counter(task for tasks in view.values() for task in tasks)
            self.seen += [
                f"{task} on {sorted(p for p, t in view.items() if task in t)}"
                for task, count in owners.items()
                if count > 1
            ]


def run_chaos(
    sandbox: Sandbox,
    cluster: KafkaCluster,
    topics: tuple[str, str],
    kinds: Sequence[str],
    rng: random.Random,
    times: ChaosTimes = ChaosTimes(),
    log: Callable[[str], None] = print,
    deadline: float | None = None,
) -> dict[str, Any]:
    """Run the sample app (orders and totals topics `topics`, `PARTITIONS` each) through the faults `kinds`,
    in order; the figures (see the module's docstring). `rng` picks pods, cuts and swap stamps. No fault
    starts after `deadline` (a `time.monotonic()` value): the checks then run on the faults done so far.
    A fault the app does not settle after within `times.settle_timeout` (or one that cannot be carried out)
    is listed in `unsettled` and the run goes on: the next faults and the final checks show whether it
    recovered."""
    orders, totals = topics
    bootstrap = cluster.bootstrap_servers
    kafka = SampleApp(APP, "default", bootstrap, None, sandbox.root / "reader")
    faults = Faults(sandbox, cluster, rng, times)
    app = streams_app(APP, orders, totals, faults.replicas, acceptable_lag=ACCEPTABLE_LAG)
    app["spec"]["template"]["spec"]["containers"][0]["env"].append(
        {"name": "STREAMS_REPLICATION_FACTOR", "value": str(REPLICATION)}
    )
    sandbox.apply(app)
    output = TotalsWatch(bootstrap, totals)
    produced = 0
    send_orders(bootstrap, orders, produced)
    produced += ORDERS_PER_FAULT
    settle(sandbox, kafka, faults.replicas, TASKS, timeout=times.settle_timeout)
    per_kind: dict[str, Counter[str]] = defaultdict(Counter)
    inject_seconds: dict[str, list[float]] = defaultdict(list)
    settle_seconds: dict[str, list[float]] = defaultdict(list)
    doubles = DoubleActives(kafka)
    unsettled: list[str] = []
    done = 0
    with running(doubles.watch, "double-actives"), running(output.watch, "totals"):
        for index, kind in enumerate(kinds):
            if deadline is not None and time.monotonic() > deadline:
                log(f"deadline reached: {done} of {len(kinds)} faults run")
                break
            before = assignor_counts(sandbox, APP)
            began = time.monotonic()
            try:
                faults.inject(kind)
                send_orders(bootstrap, orders, produced)
                produced += ORDERS_PER_FAULT
                injected = time.monotonic()
                final = settle(sandbox, kafka, faults.replicas, TASKS, timeout=times.settle_timeout)
                output.wait_for(orders, times.count_timeout)
            except (AssertionError, RuntimeError, KafkaException) as error:
                unsettled.append(f"fault {index + 1} {kind}: {error}"[:1000])
                log(f"fault {index + 1}/{len(kinds)} {kind}: NOT SETTLED: {error}"[:2000])
                continue
            finally:
                done += 1
                per_kind[kind]["faults"] += 1
            inject_seconds[kind].append(injected - began)
            settle_seconds[kind].append(time.monotonic() - injected)
            after = assignor_counts(sandbox, APP)
            per_kind[kind].update({k: max(0, v - before.get(k, 0)) for k, v in after.items()})
            log(
                f"fault {index + 1}/{len(kinds)} {kind}: injected in {inject_seconds[kind][-1]:.1f} s, "
                f"settled in {settle_seconds[kind][-1]:.1f} s on {sorted(final)}"
            )
    # Expected from the input topic itself, not from the orders sent: a send the producer could not confirm
    # (a broker restarting) may still have landed, and is sent again with the next fault's orders.
    inputs = [value for _, value in read_whole(bootstrap, orders)]
    expected = totals_of(inputs)
    counted = latest_totals(bootstrap, totals, produced, expected=expected)
    wrong = {c: (counted.get(c), want) for c, want in expected.items() if counted.get(c) != want}
    regressed = regressions(read_committed(bootstrap, totals, idle_seconds=3))
    publication = sandbox.publication(APP)
    planned = {
        p: set(a.active) for p, a in (publication.assignment.items() if publication else []) if a.active
    }
    try:
        view = settle(sandbox, kafka, faults.replicas, TASKS, timeout=times.settle_timeout)
    except AssertionError as error:
        unsettled.append(f"at the end: {error}"[:1000])
        view = {}
    return {
        "faults": done,
        "faults_drawn": len(kinds),
        "unsettled": unsettled,
        "faults_by_kind": {k: v["faults"] for k, v in sorted(per_kind.items())},
        "counts_by_kind": {k: dict(sorted(v.items())) for k, v in sorted(per_kind.items())},
        "inject_seconds_mean_by_kind": {k: round(mean(v), 1) for k, v in sorted(inject_seconds.items())},
        "settle_seconds_mean_by_kind": {k: round(mean(v), 1) for k, v in sorted(settle_seconds.items())},
        "settle_seconds_max_by_kind": {k: round(max(v), 1) for k, v in sorted(settle_seconds.items())},
        "orders": produced,
        "input_records": len(inputs),
        "lost_or_duplicated_records": len(wrong),
        "wrong_totals": {c: list(pair) for c, pair in sorted(wrong.items())},
        "totals_regressed": len(regressed),
        "totals_regressed_seen": regressed[:10],
        "double_actives": len(doubles.seen),
        "double_actives_seen": doubles.seen[:10],
        "double_active_samples": doubles.samples,
        "final_equals_plan": planned == view,
    }


class TotalsWatch:
    """The newest committed total per customer in the output topic, read as the app writes them: whether the
    app has counted every input record so far (a settled group can still be stalled: a task stuck restoring
    processes nothing)."""

    def __init__(self, bootstrap: str, topic: str) -> None:
        self.bootstrap = bootstrap
        self.topic = topic
        self.latest: dict[str, str] = {}

    def watch(self, stop: threading.Event) -> None:
        consumer = Consumer(
            {
                "bootstrap.servers": self.bootstrap,
                "group.id": f"watch-{self.topic}-{time.monotonic_ns()}",
                "isolation.level": "read_committed",
                **QUIET,
            }
        )
        try:
            partitions = consumer.list_topics(self.topic, timeout=30).topics[self.topic].partitions
            consumer.assign([TopicPartition(self.topic, p, OFFSET_BEGINNING) for p in partitions])
            while not stop.is_set():
                message = consumer.poll(0.5)
                if message is not None and message.error() is None:
                    key, value = message.key(), message.value()
                    self.latest[key.decode() if key else ""] = value.decode() if value else ""
        finally:
            consumer.close()

    def wait_for(self, orders: str, timeout: float) -> None:
        """Until the totals are those of every record the input topic `orders` holds now; AssertionError
        naming the customers behind after `timeout` seconds."""
        expected = totals_of(value for _, value in read_whole(self.bootstrap, orders))
        deadline = time.monotonic() + timeout
        while behind := {c: (self.latest.get(c), t) for c, t in expected.items() if self.latest.get(c) != t}:
            if time.monotonic() > deadline:
                raise AssertionError(f"the input not all counted within {timeout} s: {behind}")
            time.sleep(0.5)


def send_orders(bootstrap: str, orders: str, first: int, attempts: int = 10) -> None:
    """`ORDERS_PER_FAULT` orders from `first` on (each with an amount of its own, so that a customer's total
    tells a lost order from another counted twice), sent again when the producer could not confirm them all (a
    broker restarting on a loaded machine; each attempt waits 30 s, and three were once too few under a load
    average of 90): orders sent twice are input records twice, and the expected totals are the input
    topic's."""
    for attempt in range(attempts):
        try:
            produce_orders(bootstrap, orders, first, ORDERS_PER_FAULT, unique_order_value)
            return
        except (RuntimeError, KafkaException):
            if attempt == attempts - 1:
                raise


def regressions(records: Sequence[tuple[str, str]]) -> list[str]:
    """The customers whose committed totals (`records`, in the order read: one partition per customer) do not
    grow with every update: under exactly-once each committed total counts at least one order more than the
    one before, so a total that repeats or shrinks is state counted twice or rolled back, even when the
    last total ends up right. Each as `customer: before -> after`."""
    last: dict[str, int] = {}
    seen: list[str] = []
    for customer, total in records:
        orders = int(total.split(",")[0])
        if customer in last and orders <= last[customer]:
            seen.append(f"{customer}: {last[customer]} -> {orders}")
        last[customer] = orders
    return seen


class Faults:
    """Carries out each fault kind on the sandbox's app; `replicas` is what the app should run afterwards."""

    def __init__(
        self, sandbox: Sandbox, cluster: KafkaCluster, rng: random.Random, times: ChaosTimes
    ) -> None:
        self.sandbox = sandbox
        self.cluster = cluster
        self.rng = rng
        self.times = times
        self.replicas = 3

    def inject(self, kind: str) -> None:
        listed = self.sandbox.pods(APP)
        pods = sorted(p["metadata"]["name"] for p in listed if not p["metadata"].get("deletionTimestamp"))
        if kind in ("kill", "kill_lose_volume"):
            crash(self.sandbox, self.rng.choice(pods), lose_volume=kind == "kill_lose_volume")
        elif kind == "broker_restart":
            for node in self.cluster.node_ids:
                self.cluster.stop_node(node)
                self.cluster.start_node(node, timeout=self.times.broker_timeout)
        elif kind == "operator_kill":
            self.scale()
            time.sleep(2)  # the migration has begun: pods created or marked leaving, warmups placed
            self.sandbox.stop_operator(kill=True)
            time.sleep(2)
            self.sandbox.start_operator()
        elif kind == "api_server_down":
            self.scale()
            time.sleep(2)
            self.sandbox.stop_api_server()
            time.sleep(self.times.api_down_seconds)
            self.sandbox.start_api_server()
        elif kind == "leader_cut_off":
            self.leader_cut_off(self.rng.choice(list(Cut)))
        elif kind == "scale":
            self.scale()
        elif kind == "swap":
            self.swap()
        else:
            raise ValueError(f"unknown fault kind {kind!r}: one of {', '.join(KINDS)}")

    def scale(self) -> None:
        """3 -> 4 replicas, or 4 -> 3."""
        self.replicas = 7 - self.replicas
        self.sandbox.patch_app(APP, {"spec": {"replicas": self.replicas}})

    def leader_cut_off(self, how: Cut) -> None:
        """Cut the group leader's pod off the API server, change the replicas; heal it `cut_seconds` on."""
        assert self.sandbox.api_links is not None, "the sandbox needs api_links=True"
        pod = self.leader()
        self.sandbox.api_links.cut(pod, how)
        self.scale()
        time.sleep(self.times.cut_seconds)
        self.sandbox.api_links.heal(pod)

    def leader(self) -> str:
        """The pod whose Kafka Streams led the group's latest rebalance: its consumer logs "Finished
        assignment for group at generation N" with the highest N (only the leader computes assignments)."""
        assert self.sandbox.kubelet is not None
        latest: dict[str, int] = {}
        for pod in self.sandbox.pods(APP):
            log = self.sandbox.kubelet.log_file(pod["metadata"]["name"])
            text = log.read_text(errors="replace") if log is not None and log.exists() else ""
            generations = [int(g) for g in LEADER_LINE.findall(text)]
            if generations:
                latest[pod["metadata"]["name"]] = max(generations)
        if not latest:
            raise AssertionError("no pod has led a rebalance")
        return max(latest, key=lambda name: latest[name])

    def swap(self, timeout: float = 600) -> None:
        """Replace every pod, as `smoothscale swap` does; returns once none of the old pods is left."""
        before = {p["metadata"]["uid"] for p in self.sandbox.pods(APP)}
        stamp = f"2026-11-26T00:00:{self.rng.randrange(60):02d}Z-{self.rng.randrange(10**6)}"
        template = {"metadata": {"annotations": {RESTARTED_AT_ANNOTATION: stamp}}}
        self.sandbox.patch_app(APP, {"spec": {"template": template}})
        deadline = time.monotonic() + timeout
        while before & {p["metadata"]["uid"] for p in self.sandbox.pods(APP)}:
            if time.monotonic() > deadline:
                raise AssertionError(f"the swap did not replace every pod within {timeout} s")
            time.sleep(1)
