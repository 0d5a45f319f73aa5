"""Head-to-head under the streams rebalance protocol (KIP-1071), one run, three real 4.4.0 brokers (one per
zone, smoothscale's broker-side assignor loaded): the sample Kafka Streams app scaled out from 3 to 6
instances (two per zone, `client.rack` set), (a) with Kafka's built-in streams assignor (`sticky`, its
defaults: no standbys, no warmups), then (b) with smoothscale's assignor following the operator's planner:
every second the benchmark reads the group as the operator would (`Admin.describeStreamsGroups`: members,
racks, task offsets and end offsets; `smoothscale.operator.kafka.streamsgroup`), plans, and when the plan
changes writes it to the plan topic and asks for a reassignment (`smoothscale.operator.kafka.plans`).

Both apps read the same input topic (partition p led by the broker of zone p mod 3), build the same state
and share the brokers and group settings (heartbeat 500 ms, task offsets reported every second). Per run:
time from starting the new instances to a balanced assignment in Kafka's view (six pods, two active tasks
each, every member at its target; for (b) also the plan final), the target assignments Kafka computed
(rebalances), the records restored by active tasks (from the instances' logs: processing stopped
meanwhile), every moved task's pause ("Suspended from RUNNING" on its old owner to "Restored and ready to
run" on its new one), and the active tasks reading their input from another zone at the end, against the
planner's optimum; for (b) also, for each plan the members came to run, the delay from writing it to
Kafka's view showing them run it (`plan_to_running_s`). The last line is one JSON object.

    python benchmarks/streams_protocol_bench.py [--partitions 6] [--orders 60000]
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import threading
import time
from collections.abc import Iterable, Mapping
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from confluent_kafka.admin import AdminClient
from kafka_streams_bench import log_figures

from smoothscale.assignor.models import PlannerConfig
from smoothscale.assignor.planner import plan
from smoothscale.contract import streams_protocol as names
from smoothscale.contract.publication import Publication
from smoothscale.operator.kafka import plans, streamsgroup
from smoothscale.operator.kafka.reader import read_end_offsets
from smoothscale.operator.kafka.view import changelog_offsets
from smoothscale.sandbox.kafka.broker import KafkaCluster
from smoothscale.sandbox.kafka.topics import create_topic
from smoothscale.sandbox.kafka_streams import (
    SampleApp,
    StreamsGroupWatch,
    broker_assignor_jar,
    expected_totals,
    latest_totals,
    produce_orders,
    streams_protocol_app,
)
from smoothscale.sandbox.streams_app import plan_differs

ZONES = ("zone-a", "zone-b", "zone-c")
PODS = [f"pod-{i}" for i in range(6)]
GROUP_CONFIGS = {"streams.heartbeat.interval.ms": "500", "streams.task.offset.interval.ms": "1000"}
# No standbys, as Kafka's default. A copy counts as caught up within 1 record: the sample app runs
# exactly-once, and a caught-up copy reports its changelog one short of the end offset (the last
# transaction's commit marker, which is no record: 15 against 16 in `describeStreamsGroups` and ListOffsets),
# so 0 would never be reached; Kafka's 10,000, or even 100, would let a pod without any state take a task at
# once (this benchmark's subtopology 1 changelogs hold 6 to 53 records) and restore it while it is paused.
CONFIG = PlannerConfig(num_standbys=0, acceptable_recovery_lag=1)
TIMEOUT_S = 600
VARIANTS = ("builtin", "smoothscale")
MORE_ORDERS = 1000
"""Orders produced after each scale-out, to check that every order is still counted once."""


def zone_of(pod: str) -> str:
    return ZONES[int(pod.rsplit("-", 1)[1]) % len(ZONES)]


def start(app: SampleApp, pod: str) -> None:
    app.start(
        pod,
        bridged=False,
        extra_env={
            "STREAMS_CLIENT_RACK": zone_of(pod),
            "STREAMS_CLIENT_TAG_SMOOTHSCALE_APP": app.app,
            "STREAMS_CLIENT_TAG_SMOOTHSCALE_POD": pod,
        },
    )


def input_racks(cluster: KafkaCluster, app: SampleApp, partitions: int) -> dict[str, list[list[str]]]:
    """Each task's input partition's rack (its leader's zone): subtopology 0 reads the orders topic,
    subtopology 1 the app's repartition topic."""
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap_servers, "log_level": 0})
    topics = admin.list_topics(timeout=30).topics
    sources = {"0": app.env["ORDERS_TOPIC"], "1": f"{app.app}-by-customer-repartition"}
    racks: dict[str, list[list[str]]] = {}
    for sub, topic in sources.items():
        for p in range(partitions):
            rack = cluster.rack(topics[topic].partitions[p].leader)
            racks[f"{sub}_{p}"] = [[rack]] if rack else []
    return racks


def actives_by_pod(view: Mapping[str, Any]) -> dict[str, set[str]]:
    pods: dict[str, set[str]] = {}
    for member in view["members"]:
        pods.setdefault(member["pod"], set()).update(member["assignment"]["active"])
    return pods


def settled(view: Mapping[str, Any] | None, pods: list[str], tasks: int) -> bool:
    """Six pods (or three), equal actives, every member at its target assignment."""
    if view is None or view["state"] != "Stable":
        return False
    actives = actives_by_pod(view)
    counts = [len(actives.get(pod, set())) for pod in pods]
    at_target = all(m["assignment"] == m["targetAssignment"] for m in view["members"])
    return at_target and sum(counts) == tasks and max(counts) - min(counts) <= 1


def cross_zone(view: Mapping[str, Any], racks: Mapping[str, list[list[str]]]) -> int:
    """Active tasks whose input partition is led from another zone than their pod's."""
    return sum(
        1
        for pod, tasks in actives_by_pod(view).items()
        for task in tasks
        if racks.get(task) and zone_of(pod) not in racks[task][0]
    )


class Driver:
    """The operator's loop for a streams-protocol app, once a second: read the group, plan, and when the
    plan changes, write it to the plan topic and ask the coordinator for a new assignment."""

    def __init__(
        self, cluster: KafkaCluster, app: SampleApp, watch: StreamsGroupWatch, partitions: int
    ) -> None:
        self.cluster, self.app, self.watch, self.partitions = cluster, app, watch, partitions
        self.admin = AdminClient({"bootstrap.servers": cluster.bootstrap_servers, "log_level": 0})
        self.published = Publication(generation=0)
        self.written: list[tuple[float, Publication]] = []
        """Every plan written, with the monotonic time its writing started."""
        self.stable = False
        self.last_plan: Any = None
        self.racks: dict[str, list[list[str]]] = {}
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def start(self) -> Driver:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(30)

    def _run(self) -> None:
        while not self._stop.wait(1.0):
            try:
                self._round()
            except Exception as error:  # the next round tries again; the error is shown
                print(f"driver round failed: {error!r}", file=sys.stderr, flush=True)

    def _round(self) -> None:
        view = self.watch.latest(self.app.app)
        if view is None or not view["members"] or not view["subtopologies"]:
            return
        if not self.racks:
            self.racks = input_racks(self.cluster, self.app, self.partitions)
        partitions = {sub["id"]: self.partitions for sub in view["subtopologies"]}
        # As the operator does: each task's changelog size from the brokers' end offsets (`KafkaObserver`)
        owners = {topic: sub["id"] for sub in view["subtopologies"] for topic in sub["changelogTopics"]}
        ends, _ = read_end_offsets(self.admin, dict.fromkeys(owners, self.partitions), timeout=10)
        snapshot = streamsgroup.snapshot(
            view,
            now=datetime.now(UTC),
            config=CONFIG,
            partitions=partitions,
            input_racks=self.racks,
            published=self.published,
            changelog_ends=changelog_offsets(owners, ends),
        )
        result = plan(snapshot)
        self.last_plan = result
        assignment = dict(result.assignment)
        self.stable = result.stable
        if assignment != dict(self.published.assignment):
            generation = self.published.generation + 1
            self.published = Publication(generation=generation, assignment=assignment)
            self.written.append((time.monotonic(), self.published))
            producer = {"bootstrap.servers": self.cluster.bootstrap_servers}
            plans.write_plan(producer, self.app.app, self.published)
            plans.request_assignment(self.admin, self.app.app)


def plan_to_running(
    written: list[tuple[float, Publication]], samples: Iterable[tuple[float, dict[str, Any]]], group: str
) -> list[float]:
    """For each plan the members came to run before the next one was written: seconds from starting to write
    it to the first sample of Kafka's view (every 250 ms) in which every pod's members run exactly its part
    (`plan_differs`; a plan superseded before it ran is left out)."""
    delays = []
    ends = [at for at, _ in written[1:]] + [float("inf")]
    for (at, wanted), superseded in zip(written, ends, strict=True):
        runs = (
            t for t, views in samples if at <= t < superseded and not plan_differs(views.get(group), wanted)
        )
        ran = next(runs, None)
        if ran is not None:
            delays.append(ran - at)
    return delays


def run_variant(name: str, cluster: KafkaCluster, work: Path, partitions: int, orders: int) -> dict[str, Any]:
    bootstrap = cluster.bootstrap_servers
    totals = f"totals-{name}"
    create_topic(bootstrap, totals, partitions)
    app = SampleApp(
        app=f"bench-{name}",
        namespace="default",
        bootstrap=bootstrap,
        kubeconfig=None,
        work_dir=work / name,
        env={"ORDERS_TOPIC": "orders", "TOTALS_TOPIC": totals, "STREAMS_GROUP_PROTOCOL": "streams"},
        process=streams_protocol_app(),
    )
    admin = AdminClient({"bootstrap.servers": bootstrap, "log_level": 0})
    smoothscale = name == "smoothscale"
    if smoothscale:
        plans.opt_in(admin, app.app, GROUP_CONFIGS)
    else:
        plans.set_group_configs(admin, app.app, dict(GROUP_CONFIGS))
    tasks = 2 * partitions
    with StreamsGroupWatch(bootstrap, [app.app]) as watch:
        driver = Driver(cluster, app, watch, partitions).start() if smoothscale else None
        try:
            for pod in PODS[:3]:
                start(app, pod)
            latest_totals(bootstrap, totals, orders, timeout=TIMEOUT_S)
            deadline = time.monotonic() + TIMEOUT_S
            while not (settled(watch.latest(app.app), PODS[:3], tasks) and (driver is None or driver.stable)):
                if time.monotonic() > deadline:
                    raise TimeoutError(f"{name}: three instances did not settle")
                time.sleep(0.5)
            racks = input_racks(cluster, app, partitions)
            since = datetime.now()  # the instances' logs are stamped in local time, without a zone
            started = time.monotonic()
            epochs_before = watch.latest(app.app)["targetAssignmentEpoch"]  # type: ignore[index]
            for pod in PODS[3:]:
                start(app, pod)
            while True:
                view = watch.latest(app.app)
                planned = driver is None or (driver.stable and time.monotonic() - started > 5)
                if settled(view, PODS, tasks) and planned:
                    break
                if time.monotonic() - started > TIMEOUT_S:
                    raise TimeoutError(f"{name}: six instances did not settle within {TIMEOUT_S} s")
                time.sleep(0.25)
            balanced_s = time.monotonic() - started
            assert view is not None
            time.sleep(3)  # the last moves' log lines
            figures = log_figures(app, since)
            # Those are counted from the classic protocol's log lines (rebalances, and the phases of a pause):
            # Kafka's view counts the rebalances below.
            for classic_only in ("rebalances", "probing_rebalances", "longest_pause_parts_s"):
                figures.pop(classic_only, None)
            result = {
                "balanced_after_s": round(balanced_s, 1),
                "rebalances": view["targetAssignmentEpoch"] - epochs_before,
                "cross_zone_actives": cross_zone(view, racks),
                **figures,
            }
            if driver is not None and driver.last_plan is not None:
                optimum = driver.last_plan.stats.target_cross_rack_cost // CONFIG.rack_aware.traffic_cost
                result["planner_optimum_cross_zone_actives"] = optimum
                result["plan_generations"] = driver.published.generation
                delays = plan_to_running(driver.written, list(watch.samples), app.app)
                result["plan_to_running_s"] = [round(delay, 2) for delay in delays]
            produce_orders(bootstrap, "orders", orders, MORE_ORDERS)
            counted = latest_totals(bootstrap, totals, orders + MORE_ORDERS, timeout=TIMEOUT_S)
            result["every_order_counted_once"] = counted == expected_totals(orders + MORE_ORDERS)
            return result
        finally:
            if driver is not None:
                driver.stop()
            app.stop_all()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--partitions", type=int, default=6)
    parser.add_argument("--orders", type=int, default=60_000)
    parser.add_argument("--only", choices=VARIANTS, help="run one side only (no head-to-head)")
    parser.add_argument("--work-dir", type=Path, help="keep the brokers' and instances' logs here")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="streams-protocol-bench-") as tmp:
        work = args.work_dir or Path(tmp)
        jar = broker_assignor_jar()
        with KafkaCluster(work / "kafka", work / "logs", brokers=3, streams_assignor=jar) as cluster:
            bootstrap = cluster.bootstrap_servers
            leaders = [[p % 3 + 1] for p in range(args.partitions)]
            create_topic(bootstrap, "orders", args.partitions, replicas=leaders)
            plans.ensure_plan_topic(AdminClient({"bootstrap.servers": bootstrap, "log_level": 0}))
            produce_orders(bootstrap, "orders", 0, args.orders)
            results = {}
            produced = args.orders
            for name in [args.only] if args.only else VARIANTS:
                results[name] = run_variant(name, cluster, work, args.partitions, produced)
                produced += MORE_ORDERS
                print(name, json.dumps(results[name]), flush=True)
    summary = {
        "partitions": args.partitions,
        "orders": args.orders,
        "assignor_name": names.ASSIGNOR_NAME,
        **results,
    }
    print(json.dumps(summary))


if __name__ == "__main__":
    main()
