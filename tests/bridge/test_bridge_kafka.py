"""Real Kafka Streams instances follow the operator's publications through the bridge, against a real broker.

Two instances of the sample app (JVMs running `bridge/sample-app`) watch their assignment ConfigMap on an
API server over HTTP; each publication is written as the operator writes it. The test checks what a user
would see: the pods report the generation they run, Kafka's own consumer group shows the same placement,
a new generation takes effect without a restart, and every input record is counted once in the output.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterator
from pathlib import Path

import kubernetes
import pytest
from confluent_kafka.admin import AdminClient

from smoothscale.contract.publication import ClientAssignment, Publication
from smoothscale.control.observed import PodMetrics, ScrapeResult
from smoothscale.operator.scrape import Scraper
from smoothscale.resource import MetricNames
from smoothscale.sandbox.emulator import EmulatorThread
from smoothscale.sandbox.kafka.broker import KafkaCluster
from smoothscale.sandbox.kafka.topics import QUIET
from smoothscale.sandbox.kafka_streams import (
    Instance,
    SampleApp,
    create_sample_topics,
    expected_totals,
    latest_totals,
    produce_orders,
    quarkus_sample_jar,
    spring_sample_jar,
)

pytestmark = pytest.mark.slow


@pytest.fixture
def api_server() -> Iterator[Path]:
    with EmulatorThread() as running:
        yield running.kubeconfig


@pytest.fixture(params=["code", "properties", "spring", "quarkus"])
def adoption(request: pytest.FixtureRequest) -> str:
    """How the app adopts smoothscale: the code API (`SmoothscaleBridge`), or its settings alone, in a plain
    app (`PlainOrdersApp`: `metric.reporters`, `task.assignor.class`, `client.id` in a properties file), in
    the Spring Boot sample (`spring.kafka.streams.*` in its `application.properties`) or in the Quarkus sample
    (`kafka-streams.*` in its `application.properties`)."""
    return str(request.param)


@pytest.fixture
def orders_app(kafka_broker: KafkaCluster, api_server: Path, tmp_path: Path) -> Iterator[SampleApp]:
    bootstrap = kafka_broker.bootstrap_servers
    suffix = tmp_path.name[-12:].replace("_", "-").strip("-")
    orders, totals = create_sample_topics(bootstrap, suffix, 4)
    app = SampleApp(
        app=f"shop-{suffix}",
        namespace="default",
        bootstrap=bootstrap,
        kubeconfig=api_server,
        work_dir=tmp_path,
        env={"ORDERS_TOPIC": orders, "TOTALS_TOPIC": totals},
    )
    try:
        yield app
    finally:
        app.stop_all()


def test_instances_follow_each_publication_and_count_every_order_once(
    orders_app: SampleApp, adoption: str
) -> None:
    api = kubernetes.client.CoreV1Api(kubernetes.config.new_client_from_config(str(orders_app.kubeconfig)))
    mode = {"SMOOTHSCALE_BRIDGE": "properties"} if adoption == "properties" else {}
    framework_jars = {"spring": spring_sample_jar, "quarkus": quarkus_sample_jar}
    jar = framework_jars[adoption]() if adoption in framework_jars else None
    # The Spring Boot and Quarkus samples have Micrometer's Prometheus registry: the bridge's metrics join the
    # app's on its HTTP port, at the framework's path; the plain samples serve them on the bridge's endpoint.
    path = {"spring": "/actuator/prometheus", "quarkus": "/q/metrics"}.get(adoption, "/metrics")
    first = Publication(
        generation=1,
        assignment={
            "orders-0": ClientAssignment(active=["0_0", "0_1", "1_0", "1_1"], standby=["0_2"]),
            "orders-1": ClientAssignment(active=["0_2", "0_3", "1_2", "1_3"], warmup=["0_0"]),
        },
    )
    orders_app.publish(api, first)
    for pod in ("orders-0", "orders-1"):
        orders_app.start(pod, extra_env=mode, jar=jar, metrics_path=path)
    orders_app.wait_generation(["orders-0", "orders-1"], 1, timeout=180)  # the frameworks start slower
    assert orders_app.kafka_view() == {
        "orders-0": {"0_0", "0_1", "1_0", "1_1"},
        "orders-1": {"0_2", "0_3", "1_2", "1_3"},
    }
    produce_orders(orders_app.bootstrap, orders_app.env["ORDERS_TOPIC"], 0, 400)

    moved = Publication(
        generation=2,
        assignment={
            "orders-0": ClientAssignment(active=["0_0", "1_0"], standby=["0_1", "0_2"]),
            "orders-1": ClientAssignment(active=["0_1", "0_2", "0_3", "1_1", "1_2", "1_3"], standby=["0_0"]),
        },
    )
    published = orders_app.publish(api, moved)
    running = orders_app.wait_generation(["orders-0", "orders-1"], 2, timeout=60)
    print(f"{adoption}: generation 2 ran on both instances {running - published:.2f} s after it was written")
    assert running - published < 10, "a new publication must take effect within seconds, without restarts"
    assert orders_app.kafka_view() == {
        "orders-0": {"0_0", "1_0"},
        "orders-1": {"0_1", "0_2", "0_3", "1_1", "1_2", "1_3"},
    }
    lags = orders_app.instances["orders-0"].metrics()
    assert 'smoothscale_task_lag{task="0_1"}' in lags, "the standby's state is reported with its lag"
    assert 'smoothscale_task_changelog_end_offset{task="1_0"}' in lags
    assert any(series.startswith("smoothscale_task_process_rate") for series in lags)
    # What the operator reads from the endpoint, scraped and parsed as it does (Micrometer's, frameworks).
    seen = asyncio.run(_operator_scrape(orders_app.instances["orders-0"]))
    assert isinstance(seen, PodMetrics), seen
    assert seen.generation == 2
    assert {"0_0", "0_1", "0_2", "1_0"} <= set(seen.lags) and "1_0" in seen.end_offsets
    if adoption in framework_jars:
        assert "jvm_memory_used_bytes" in orders_app.instances["orders-0"].scrape(), "the app's own endpoint"

    produce_orders(orders_app.bootstrap, orders_app.env["ORDERS_TOPIC"], 400, 400)
    totals = latest_totals(orders_app.bootstrap, orders_app.env["TOTALS_TOPIC"], 800)
    assert totals == expected_totals(800)
    # The standbys keep up: what the operator judges warmups by (within a few offsets: exactly-once leaves its
    # last commit marker behind; a standby that is not followed reports hundreds here).
    deadline = time.monotonic() + 30
    while (lags := _standby_lags(orders_app)) and max(lags.values()) > 5 and time.monotonic() < deadline:
        time.sleep(0.5)
    assert lags and max(lags.values()) <= 5, f"standbys caught up: {lags}"
    for pod in ("orders-0", "orders-1"):
        assert orders_app.instances[pod].process.poll() is None, f"{pod} kept running: no restart was needed"


async def _operator_scrape(instance: Instance) -> ScrapeResult:
    """The instance's metrics as the operator's scraper reads and parses them."""
    scraper = Scraper(timeout=5)
    url = f"http://127.0.0.1:{instance.metrics_port}{instance.metrics_path}"
    try:
        return (await scraper.scrape_all({instance.pod: url}, MetricNames()))[instance.pod]
    finally:
        await scraper.close()


def _standby_lags(orders_app: SampleApp) -> dict[str, float]:
    """The lags orders-0 reports for its standbys of generation 2 (0_1, 0_2) and orders-1 for 0_0."""
    wanted = {"orders-0": ("0_1", "0_2"), "orders-1": ("0_0",)}
    lags = {}
    for pod, tasks in wanted.items():
        series = orders_app.instances[pod].metrics()
        for task in tasks:
            lag = series.get(f'smoothscale_task_lag{{task="{task}"}}')
            if lag is not None:
                lags[f"{pod}/{task}"] = lag
    return lags


def test_a_crashed_instances_tasks_fail_over_to_the_leader_without_losing_one(orders_app: SampleApp) -> None:
    api = kubernetes.client.CoreV1Api(kubernetes.config.new_client_from_config(str(orders_app.kubeconfig)))
    orders_app.publish(
        api,
        Publication(
            generation=1,
            assignment={
                "orders-0": ClientAssignment(active=["0_0", "0_1", "1_0", "1_1"]),
                "orders-1": ClientAssignment(active=["0_2", "0_3", "1_2", "1_3"]),
            },
        ),
    )
    quick_failure = {"STREAMS_SESSION_TIMEOUT_MS": "6000", "STREAMS_HEARTBEAT_INTERVAL_MS": "1000"}
    for pod in ("orders-0", "orders-1"):
        orders_app.start(pod, extra_env=quick_failure)
    orders_app.wait_generation(["orders-0", "orders-1"], 1, timeout=120)
    produce_orders(orders_app.bootstrap, orders_app.env["ORDERS_TOPIC"], 0, 300)

    orders_app.instances["orders-1"].kill()  # SIGKILL: it leaves the group only when its session expires

    everything = {f"{s}_{p}" for s in (0, 1) for p in range(4)}
    deadline = time.monotonic() + 60
    while orders_app.kafka_view() != {"orders-0": everything} and time.monotonic() < deadline:
        time.sleep(0.5)
    assert orders_app.kafka_view() == {"orders-0": everything}, "the survivor runs every task"
    led = orders_app.instances["orders-0"].metrics()  # orders-0 led: orders-1 was its only peer
    assert led.get("smoothscale_bridge_assignor_failovers_total", 0) >= 1, "a fail-over, the plan kept"
    fallbacks = [series for series in led if series.startswith("smoothscale_bridge_assignor_fallbacks")]
    assert [series for series in fallbacks if "no_publication" not in series] == [], led  # only at start-up
    survivor = orders_app.instances["orders-0"]
    assert "smoothscale_assignment_generation" not in led or survivor.generation() == 1

    produce_orders(orders_app.bootstrap, orders_app.env["ORDERS_TOPIC"], 300, 300)
    totals = latest_totals(orders_app.bootstrap, orders_app.env["TOTALS_TOPIC"], 600)
    assert totals == expected_totals(600), "every order counted once across the crash (exactly-once)"


def test_a_static_member_restarted_within_its_session_keeps_its_tasks_without_a_rebalance(
    orders_app: SampleApp,
) -> None:
    api = kubernetes.client.CoreV1Api(kubernetes.config.new_client_from_config(str(orders_app.kubeconfig)))
    plan = {
        "orders-0": {"0_0", "0_1", "1_0", "1_1"},
        "orders-1": {"0_2", "0_3", "1_2", "1_3"},
    }
    orders_app.publish(
        api,
        Publication(
            generation=1,
            assignment={pod: ClientAssignment(active=sorted(tasks)) for pod, tasks in plan.items()},
        ),
    )

    def static(pod: str) -> dict[str, str]:
        return {"STREAMS_GROUP_INSTANCE_ID": pod, "STREAMS_SESSION_TIMEOUT_MS": "45000"}

    orders_app.start("orders-0", extra_env=static("orders-0"))  # the first member: it leads every rebalance
    deadline = time.monotonic() + 120
    while not orders_app.instances["orders-0"].metrics().get("smoothscale_bridge_assignor_failovers_total"):
        # alone, it runs orders-1's tasks too (a fail-over: the plan names a pod not in the group yet)
        assert time.monotonic() < deadline, "orders-0 never led a rebalance"
        time.sleep(0.2)
    orders_app.start("orders-1", extra_env=static("orders-1"))
    orders_app.wait_generation(["orders-0", "orders-1"], 1, timeout=120)
    assert orders_app.kafka_view() == plan, "static members are mapped to their pods and follow the plan"
    produce_orders(orders_app.bootstrap, orders_app.env["ORDERS_TOPIC"], 0, 300)
    leader = orders_app.instances["orders-0"]

    def assignments(instance: Instance) -> dict[str, float]:
        """What the leader's assignor has done: rebalances that followed the plan, fail-overs, fallbacks."""
        return {s: v for s, v in instance.metrics().items() if s.startswith("smoothscale_bridge_assignor_")}

    before = assignments(leader)

    # A rolling restart: SIGTERM closes Kafka Streams cleanly (a SIGKILL under exactly-once finds its state
    # corrupted on restart, and Kafka Streams then asks for a rebalance itself); a static member sends no
    # LeaveGroup, so the group waits for it until its session times out.
    orders_app.instances["orders-1"].stop()
    orders_app.start("orders-1", extra_env=static("orders-1"))  # back well within the 45 s session
    orders_app.wait_generation(["orders-1"], 1, timeout=40)
    assert orders_app.kafka_view() == plan, "the restarted pod has its own tasks back"
    produce_orders(orders_app.bootstrap, orders_app.env["ORDERS_TOPIC"], 300, 300)
    totals = latest_totals(orders_app.bootstrap, orders_app.env["TOTALS_TOPIC"], 600)
    assert totals == expected_totals(600), "every order counted once across the restart"

    assert assignments(leader) == before, "no rebalance: the leader assigned nothing, fell back nowhere"


def _instance_ids(orders_app: SampleApp) -> set[str]:
    """The `group.instance.id` of every member of the app's group, as Kafka's coordinator holds them."""
    client = AdminClient({"bootstrap.servers": orders_app.bootstrap, **QUIET})
    described = client.describe_consumer_groups([orders_app.app])[orders_app.app].result(timeout=30)
    return {member.group_instance_id for member in described.members if member.group_instance_id}


def test_a_retired_static_member_leaves_the_group_when_its_instance_closes(orders_app: SampleApp) -> None:
    """The operator retires a pod once the plan gives it nothing (a scale-in, a swap, a drain): its bridge
    then takes its static members out of the group when it closes (`StaticMembersLeave`), instead of leaving
    the group to wait out their 45 s session at its next rebalance."""
    api = kubernetes.client.CoreV1Api(kubernetes.config.new_client_from_config(str(orders_app.kubeconfig)))
    everything = {f"{s}_{p}" for s in (0, 1) for p in range(4)}
    halves = {"orders-0": {"0_0", "0_1", "1_0", "1_1"}, "orders-1": {"0_2", "0_3", "1_2", "1_3"}}
    first = {pod: ClientAssignment(active=sorted(tasks)) for pod, tasks in halves.items()}
    orders_app.publish(api, Publication(generation=1, assignment=first))
    for pod in ("orders-0", "orders-1"):
        orders_app.start(
            pod, extra_env={"STREAMS_GROUP_INSTANCE_ID": pod, "STREAMS_SESSION_TIMEOUT_MS": "45000"}
        )
    orders_app.wait_generation(["orders-0", "orders-1"], 1, timeout=180)
    assert _instance_ids(orders_app) == {"orders-0-1", "orders-1-1"}
    produce_orders(orders_app.bootstrap, orders_app.env["ORDERS_TOPIC"], 0, 300)

    retiring = {"orders-0": ClientAssignment(active=sorted(everything)), "orders-1": ClientAssignment()}
    orders_app.publish(api, Publication(generation=2, assignment=retiring))
    orders_app.wait_generation(["orders-0", "orders-1"], 2, timeout=60)
    stopped = time.monotonic()
    orders_app.instances["orders-1"].stop()  # SIGTERM, as the kubelet stops a deleted pod
    while "orders-1-1" in _instance_ids(orders_app):
        assert time.monotonic() - stopped < 20, "the retired pod's member is still in the group"
        time.sleep(0.2)
    print(f"orders-1's static member left the group {time.monotonic() - stopped:.1f} s after SIGTERM")
    # Well within the 45 s session: the bridge removed it (its log line may be lost to log4j's own shutdown).
    assert _instance_ids(orders_app) == {"orders-0-1"}

    produce_orders(orders_app.bootstrap, orders_app.env["ORDERS_TOPIC"], 300, 300)
    totals = latest_totals(orders_app.bootstrap, orders_app.env["TOTALS_TOPIC"], 600)
    assert totals == expected_totals(600), "every order counted once"
    assert orders_app.kafka_view() == {"orders-0": everything}
