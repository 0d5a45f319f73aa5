"""Chaos on real Kafka Streams (issue 25): three brokers and the Java sample app (the smoothscale-streams
bridge) under the real operator in the sandbox, through a seeded random sequence of faults, each followed
by new orders and a wait until the app has settled again (every pod ready, the operator's plan exactly
Kafka's view of the group, balanced). The app has no spec.topology: the operator plans with the one the
bridge reports.

Fault kinds (`KINDS`, with their weights in the mix): `kill` (a pod's JVM SIGKILLed, restarted with its state
directory), `kill_lose_volume` (the same without it: state restored from the changelogs), `broker_restart` (a
rolling restart of the three brokers), `operator_kill` (replicas changed, the operator SIGKILLed two seconds
into the migration and started again), `api_server_down` (replicas changed, then the API server stopped for
a minute two seconds into the migration: connections refused, watches broken; the operator, the kubelet
stand-in and every pod's ConfigMap watch must come back by themselves), `leader_cut_off` (the group leader's
pod cut off from the API server for `CUT_SECONDS`, its packets dropped or its connections refused, while the
replicas change, so that the operator publishes plans the leader cannot see), `scale` (replicas 3 <-> 4) and
`swap` (every pod replaced, as `smoothscale swap` does).

Checked: every order counted exactly once in the output (exactly-once), no task ever in two pods' assignment
in Kafka's view of the group (sampled every second), the final assignment balanced and equal to the plan;
rebalances led (`smoothscale_bridge_assignor_followed_total`) and fallbacks
(`smoothscale_bridge_assignor_fallbacks_total`, by reason) counted per fault kind from the pods' metrics
(a restarted pod's counters start again: its earlier counts are lost).

    python benchmarks/streams_chaos.py --faults 100 --seed 1

The last line is one JSON object. Exits 1 when a record was lost or duplicated, or a task ran twice.
"""

from __future__ import annotations

import argparse
import json
import random
import re
import sys
import tempfile
import threading
import time
import urllib.request
from collections import Counter, defaultdict
from pathlib import Path
from statistics import mean

from confluent_kafka import KafkaException
from prometheus_client.parser import text_string_to_metric_families

from smoothscale.operator.control.names import RESTARTED_AT_ANNOTATION
from smoothscale.sandbox.addresses import random_block
from smoothscale.sandbox.api_links import Cut
from smoothscale.sandbox.background import running
from smoothscale.sandbox.harness import Sandbox
from smoothscale.sandbox.kafka.broker import KafkaCluster
from smoothscale.sandbox.kafka_streams import (
    SampleApp,
    create_sample_topics,
    expected_totals,
    latest_totals,
    produce_orders,
)
from smoothscale.sandbox.streams_app import crash, settle, streams_app

APP = "chaos-shop"
PARTITIONS = 4
TASKS = 2 * PARTITIONS
ORDERS_PER_FAULT = 40
ACCEPTABLE_LAG = 5
KINDS = {
    "kill": 3,
    "kill_lose_volume": 2,
    "broker_restart": 1,
    "operator_kill": 1,
    "api_server_down": 1,
    "leader_cut_off": 1,
    "scale": 2,
    "swap": 1,
}
API_DOWN_SECONDS = 60.0
CUT_SECONDS = 40.0
"""Longer than a plan's follow-up and a few probing rounds, shorter than the bridge's plan patience (2 min):
the leader follows what it last saw."""
LEADER_LINE = re.compile(r"Finished assignment for group at generation (\d+)")


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


def assignor_counts(sandbox: Sandbox) -> Counter[str]:
    """Rebalances led and fallbacks by reason, summed over the app's pods (their metrics endpoints)."""
    counts: Counter[str] = Counter()
    for pod in sandbox.pods(APP):
        ip = (pod.get("status") or {}).get("podIP")
        if not ip:
            continue
        try:
            with urllib.request.urlopen(f"http://{ip}:8080/metrics", timeout=2) as response:
                text = response.read().decode()
        except OSError:
            continue
        for family in text_string_to_metric_families(text):
            for sample in family.samples:
                if sample.name == "smoothscale_bridge_assignor_followed_total":
                    counts["rebalances_followed"] += int(sample.value)
                elif sample.name == "smoothscale_bridge_assignor_fallbacks_total":
                    counts[f"fallback_{sample.labels['reason']}"] += int(sample.value)
    return counts


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--faults", type=int, default=100)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--keep", type=Path, help="run in this directory and keep it (logs)")
    parser.add_argument(
        "--kinds", default=",".join(KINDS), help="comma-separated fault kinds to draw from (default: all)"
    )
    args = parser.parse_args(argv)
    kinds = {kind: KINDS[kind] for kind in args.kinds.split(",") if kind in KINDS}
    if len(kinds) != len(args.kinds.split(",")):
        parser.error(f"--kinds: each must be one of {', '.join(KINDS)}")
    rng = random.Random(args.seed)
    started = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="streams-chaos-") as scratch:
        root = args.keep or Path(scratch)
        with KafkaCluster(root / "kafka", root / "kafka-logs", brokers=3) as cluster:
            bootstrap = cluster.bootstrap_servers
            orders, totals = create_sample_topics(bootstrap, f"chaos{args.seed}", PARTITIONS)
            with Sandbox(
                root / "sandbox", kafka_bootstrap=bootstrap, first_address=random_block(), api_links=True
            ) as sandbox:
                result = run(sandbox, cluster, rng, args.faults, kinds, orders, totals, root)
    result["seed"] = args.seed
    result["seconds"] = round(time.monotonic() - started, 1)
    print(json.dumps(result, sort_keys=True))
    return 1 if result["lost_or_duplicated_records"] or result["double_actives"] else 0


def run(
    sandbox: Sandbox,
    cluster: KafkaCluster,
    rng: random.Random,
    faults: int,
    kinds: dict[str, int],
    orders: str,
    totals: str,
    root: Path,
) -> dict[str, object]:
    bootstrap = cluster.bootstrap_servers
    kafka = SampleApp(APP, "default", bootstrap, None, root / "reader")
    replicas = 3
    sandbox.apply(streams_app(APP, orders, totals, replicas, acceptable_lag=ACCEPTABLE_LAG))
    produced = 0
    produce_orders(bootstrap, orders, produced, ORDERS_PER_FAULT)
    produced += ORDERS_PER_FAULT
    settle(sandbox, kafka, replicas, TASKS)
    per_kind: dict[str, Counter[str]] = defaultdict(Counter)
    inject_seconds: dict[str, list[float]] = defaultdict(list)
    settle_seconds: dict[str, list[float]] = defaultdict(list)
    doubles = DoubleActives(kafka)
    with running(doubles.watch, "double-actives"):
        for index in range(faults):
            kind = rng.choices(list(kinds), list(kinds.values()))[0]
            before = assignor_counts(sandbox)
            began = time.monotonic()
            replicas = inject(kind, sandbox, cluster, rng, replicas, root / "sandbox/sandbox/logs")
            produce_orders(bootstrap, orders, produced, ORDERS_PER_FAULT)
            produced += ORDERS_PER_FAULT
            injected = time.monotonic()
            final = settle(sandbox, kafka, replicas, TASKS, timeout=600)
            inject_seconds[kind].append(injected - began)
            settle_seconds[kind].append(time.monotonic() - injected)
            after = assignor_counts(sandbox)
            per_kind[kind]["faults"] += 1
            per_kind[kind].update({k: max(0, v - before.get(k, 0)) for k, v in after.items()})
            print(
                f"fault {index + 1}/{faults} {kind}: injected in {inject_seconds[kind][-1]:.1f} s, "
                f"settled in {settle_seconds[kind][-1]:.1f} s on {sorted(final)}",
                flush=True,
            )
    counted = latest_totals(bootstrap, totals, produced)
    wrong = {
        c: (counted.get(c), want) for c, want in expected_totals(produced).items() if counted.get(c) != want
    }
    publication = sandbox.publication(APP)
    planned = {
        p: set(a.active) for p, a in (publication.assignment.items() if publication else []) if a.active
    }
    view = settle(sandbox, kafka, replicas, TASKS)
    return {
        "faults": faults,
        "faults_by_kind": {k: v["faults"] for k, v in sorted(per_kind.items())},
        "counts_by_kind": {k: dict(sorted(v.items())) for k, v in sorted(per_kind.items())},
        "inject_seconds_mean_by_kind": {k: round(mean(v), 1) for k, v in sorted(inject_seconds.items())},
        "settle_seconds_mean_by_kind": {k: round(mean(v), 1) for k, v in sorted(settle_seconds.items())},
        "settle_seconds_max_by_kind": {k: round(max(v), 1) for k, v in sorted(settle_seconds.items())},
        "orders": produced,
        "lost_or_duplicated_records": len(wrong),
        "double_actives": len(doubles.seen),
        "double_active_samples": doubles.samples,
        "final_equals_plan": planned == view,
    }


def inject(
    kind: str, sandbox: Sandbox, cluster: KafkaCluster, rng: random.Random, replicas: int, logs: Path
) -> int:
    """Carry out one fault; the replicas the app should run afterwards."""
    listed = sandbox.pods(APP)
    pods = sorted(p["metadata"]["name"] for p in listed if not p["metadata"].get("deletionTimestamp"))
    if kind in ("kill", "kill_lose_volume"):
        crash(sandbox, rng.choice(pods), lose_volume=kind == "kill_lose_volume")
    elif kind == "broker_restart":
        rolling_restart(cluster)
    elif kind == "operator_kill":
        return operator_kill(sandbox, 7 - replicas)
    elif kind == "api_server_down":
        return api_server_down(sandbox, 7 - replicas)
    elif kind == "leader_cut_off":
        return leader_cut_off(sandbox, 7 - replicas, rng.choice(list(Cut)), logs)
    elif kind == "scale":
        return scale(sandbox, 7 - replicas)
    else:
        swap(sandbox, rng)
    return replicas


def rolling_restart(cluster: KafkaCluster) -> None:
    for node in cluster.node_ids:
        cluster.stop_node(node)
        cluster.start_node(node)


def scale(sandbox: Sandbox, replicas: int) -> int:
    sandbox.patch_app(APP, {"spec": {"replicas": replicas}})
    return replicas


def operator_kill(sandbox: Sandbox, replicas: int) -> int:
    scale(sandbox, replicas)
    time.sleep(2)  # the migration has begun: pods created or marked leaving, warmups placed
    sandbox.stop_operator(kill=True)
    time.sleep(2)
    sandbox.start_operator()
    return replicas


def api_server_down(sandbox: Sandbox, replicas: int) -> int:
    scale(sandbox, replicas)
    time.sleep(2)  # the migration has begun
    sandbox.stop_api_server()
    time.sleep(API_DOWN_SECONDS)
    sandbox.start_api_server()
    return replicas


def leader_cut_off(sandbox: Sandbox, replicas: int, how: Cut, logs: Path) -> int:
    """Cut the group leader's pod off the API server, change the replicas; heal the link `CUT_SECONDS` on."""
    assert sandbox.api_links is not None
    pod = leader(sandbox, logs)
    sandbox.api_links.cut(pod, how)
    scale(sandbox, replicas)
    time.sleep(CUT_SECONDS)
    sandbox.api_links.heal(pod)
    return replicas


def leader(sandbox: Sandbox, logs: Path) -> str:
    """The pod whose Kafka Streams led the group's latest rebalance: its consumer logs "Finished assignment
    for group at generation N" with the highest N (only the leader computes assignments)."""
    latest: dict[str, int] = {}
    for pod in sandbox.pods(APP):
        metadata = pod["metadata"]
        log = logs / f"{metadata['namespace']}.{metadata['name']}.{metadata['uid'][:8]}.log"
        text = log.read_text(errors="replace") if log.exists() else ""
        generations = [int(g) for g in LEADER_LINE.findall(text)]
        if generations:
            latest[metadata["name"]] = max(generations)
    if not latest:
        raise AssertionError("no pod has led a rebalance")
    return max(latest, key=lambda name: latest[name])


def swap(sandbox: Sandbox, rng: random.Random, timeout: float = 600) -> None:
    """Replace every pod, as `smoothscale swap` does; returns once none of the old pods is left."""
    before = {p["metadata"]["uid"] for p in sandbox.pods(APP)}
    stamp = {RESTARTED_AT_ANNOTATION: f"2026-11-26T00:00:{rng.randrange(60):02d}Z-{rng.randrange(10**6)}"}
    sandbox.patch_app(APP, {"spec": {"template": {"metadata": {"annotations": stamp}}}})
    deadline = time.monotonic() + timeout
    while before & {p["metadata"]["uid"] for p in sandbox.pods(APP)}:
        if time.monotonic() > deadline:
            raise AssertionError(f"the swap did not replace every pod within {timeout} s")
        time.sleep(1)


if __name__ == "__main__":
    sys.exit(main())
