"""`smoothscale demo --kafka`: three real Kafka brokers, one per zone, and real Kafka Streams pods.

The app is the Java sample app (`bridge/sample-app`, `spec.runtime: KafkaStreams`), or the user's own
(`OwnApp`: `--app-jar`), run by the kubelet stand-in as each pod's process, through the demo's steps.
Three brokers rather than one: partition p of each
input topic lives on the broker of zone p mod 3 (`broker.rack`), so the operator reads real racks, places
every active task in its partitions' zone, and reports what it read in `status.kafka`. Orders flow in all
along (`OrderFeed`); at the end every order must be counted exactly once in the totals, and Kafka's own view
of the group must be the operator's plan (`kafka_checks`). The user's app gets the input topics it names
(`InputTopic`), fed with the same keyed string records; what it makes of them is its own business: the
demo judges what it can see for any app (every task processing on its planned owner, Kafka's view of the
group, balance, the bridge's fallbacks).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TextIO

from confluent_kafka import KafkaException
from confluent_kafka.admin import AdminClient

from smoothscale.contract.publication import Publication
from smoothscale.operator.kafka import plans

from .app_process import AppProcess
from .demo import APP, NAMESPACE, PARTITIONS, demo_app
from .kafka.broker import KafkaCluster
from .kafka.topics import QUIET, create_topic, produce
from .kafka_streams import SampleApp, broker_assignor_jar, expected_totals, latest_totals, produce_orders
from .streams_app import STREAMS_GROUP_CONFIGS, streams_protocol_env, streams_protocol_kafka

ORDERS = "orders"
TOTALS = "totals"
REPARTITION = f"{APP}-by-customer-repartition"
"""The sample app's repartition topic (its application id is the app's name): subtopology 1's input."""
CHANGELOGS = (f"{APP}-order-versions-changelog", f"{APP}-customer-totals-changelog")
"""The sample app's two stores' changelogs (`OrdersTopology`: `order-versions`, `customer-totals`)."""


@dataclass(frozen=True)
class InputTopic:
    """`--input TOPIC:PARTITIONS[:RECORDS_PER_S]`: a topic the demo creates and feeds."""

    topic: str
    partitions: int
    rate: int = 10

    @classmethod
    def parse(cls, text: str) -> InputTopic:
        """From `TOPIC:PARTITIONS[:RECORDS_PER_S]`; a ValueError saying what is wrong otherwise."""
        parts = text.split(":")
        if len(parts) not in (2, 3) or not parts[0]:
            raise ValueError(f"{text!r} is not TOPIC:PARTITIONS[:RECORDS_PER_S] (orders:6 or orders:6:20)")
        numbers = []
        for name, value in zip(("PARTITIONS", "RECORDS_PER_S"), parts[1:], strict=False):
            if not value.isdigit() or int(value) < 1:
                raise ValueError(f"{text!r}: {name} must be a whole number of at least 1, got {value!r}")
            numbers.append(int(value))
        return cls(parts[0], *numbers)


@dataclass(frozen=True)
class OwnApp:
    """The user's app for the demo: how its pods run (`AppProcess`), the input topics to create and feed,
    the environment every pod gets (how such an app receives its settings, the bridge's among them), and
    its name (the StreamsApp's, which is the app's `application.id`)."""

    process: AppProcess
    inputs: tuple[InputTopic, ...] = ()
    env: Mapping[str, str] = field(default_factory=dict)
    name: str = APP


def sample_topics() -> dict[str, int]:
    """The sample app's topics and their partitions: its input, output and repartition topics. The
    repartition topic is created here too, zone by zone like the others, so that the operator reads its
    racks from the start (Kafka Streams accepts an internal topic that exists with its partition count)."""
    subtopologies = demo_app()["spec"]["topology"]["subtopologies"]
    inputs = {topic for sub in subtopologies for topic in sub["inputTopics"]}
    return dict.fromkeys(sorted(inputs | {REPARTITION, TOTALS}), PARTITIONS)


@contextmanager
def demo_kafka(
    output_dir: Path,
    out: TextIO,
    topics: Mapping[str, int],
    *,
    streams_protocol: bool = False,
    app: str = APP,
) -> Iterator[dict[str, Any]]:
    """Start the brokers and create `topics` (name: partitions), partition p on the broker of zone p mod 3;
    yields the app's `spec.kafka`; stops the brokers after. With `streams_protocol` every broker loads
    smoothscale's streams assignor (`bridge/broker-assignor`), the group of `app` gets the sandbox's group
    configs (`STREAMS_GROUP_CONFIGS`) and `spec.kafka` says `groupProtocol: streams`."""
    plugin = broker_assignor_jar() if streams_protocol else None
    with_plugin = ", each with smoothscale's streams assignor" if streams_protocol else ""
    out.write(f"starting 3 Kafka brokers (zone-a, zone-b, zone-c){with_plugin}...\n")
    out.flush()
    with KafkaCluster(
        output_dir / "kafka", output_dir / "kafka-logs", brokers=3, streams_assignor=plugin
    ) as cluster:
        bootstrap = cluster.bootstrap_servers
        for topic, partitions in topics.items():
            create_topic(bootstrap, topic, partitions, replicas=[[p % 3 + 1] for p in range(partitions)])
        out.write(f"Kafka {bootstrap}, broker logs in {cluster.log_dir}\n")
        if not streams_protocol:
            yield {"bootstrapServers": bootstrap, "refreshInterval": "5s", "timeout": "3s"}
            return
        admin = AdminClient({"bootstrap.servers": bootstrap, **QUIET})
        plans.set_group_configs(admin, app, dict(STREAMS_GROUP_CONFIGS))
        yield streams_protocol_kafka(bootstrap)


def fill_changelogs(bootstrap: str, records: int) -> None:
    """Create the sample app's changelogs before it starts, `records` in each partition (partition p on the
    broker of zone p mod 3), as an app's that has run for a while: the stores its pods restore are then what
    a real app's are, not the demo's minutes of orders, and a scale-out's new pods warm up for a while
    before their tasks move (`--history`; the embedded demo's workers start every changelog at 30,000
    records the same way). The records' keys are none the app ever reads (`key-<n>`): its counts stay
    exact. Kafka Streams takes an internal topic that exists with its partition count."""
    replicas = [[p % 3 + 1] for p in range(PARTITIONS)]
    compacted = {"cleanup.policy": "compact"}
    for changelog in CHANGELOGS:
        create_topic(bootstrap, changelog, PARTITIONS, replicas=replicas, config=compacted)
        produce(bootstrap, changelog, dict.fromkeys(range(PARTITIONS), records))


def kafka_streams_app(spec_kafka: Mapping[str, Any]) -> dict[str, Any]:
    """The demo app run by real Kafka Streams pods: no `spec.topology` (the operator learns the sample's
    two stateful subtopologies from the app); a killed instance leaves the group after 10 s, not Kafka's 45 s
    (on the streams protocol a group config: `demo_kafka`). The acceptable recovery lag is 100, not 2,000:
    the orders fill each changelog by tens of records a second, so that against 2,000 every new pod would
    count as caught up and no warmup would show. On the streams protocol (`spec_kafka`'s `groupProtocol`)
    the pods run without the bridge, tagged for the brokers' plugin (`streams_app.streams_protocol_env`)."""
    streams = spec_kafka.get("groupProtocol") == "streams"
    env = {"ORDERS_TOPIC": ORDERS, "TOTALS_TOPIC": TOTALS}
    app = _kafka_streams(spec_kafka, env if streams else {**env, "STREAMS_SESSION_TIMEOUT_MS": "10000"})
    # The operator learns the topology from the app (the bridge on the group leader, or on the streams
    # protocol the group coordinator): both subtopologies stateful, as the sample's are. With the embedded
    # demo's (subtopology 0 stateless: TopologyMismatch) it planned subtopology 0's tasks as if they had no
    # state; on the streams protocol it kept probing for minutes after a swap, and with a `--history` the
    # bridge kept those tasks where their state was (a fallback) while the plan moved them, round after round.
    del app["spec"]["topology"]
    if streams:
        app["spec"]["template"]["spec"]["containers"][0]["env"] += streams_protocol_env(APP)
    return app


def own_streams_app(spec_kafka: Mapping[str, Any], own: OwnApp) -> dict[str, Any]:
    """The user's app as the demo's StreamsApp, named as the app: no `spec.topology` (the bridge on the
    group leader reports it, or on the streams protocol the group coordinator, and the operator plans with
    it), the pods' environment the app's, the bridge's metrics port (9494: no common framework's default)."""
    app = _kafka_streams(spec_kafka, own.env)
    app["metadata"]["name"] = own.name
    del app["spec"]["topology"]
    app["spec"]["metrics"]["port"] = 9494
    return app


def _kafka_streams(spec_kafka: Mapping[str, Any], env: Mapping[str, str]) -> dict[str, Any]:
    app = demo_app(kafka=spec_kafka)
    spec = app["spec"]
    spec["runtime"] = "KafkaStreams"
    spec["assignment"]["acceptableRecoveryLag"] = 100
    container = spec["template"]["spec"]["containers"][0]
    container["env"] = [{"name": name, "value": value} for name, value in env.items()]
    return app


class OrderFeed:
    """Orders (keyed string records: key `order-<n>`, value `customer-<n mod 10>:<amount>`) into each topic
    of `rates` at its rate a second, in batches, for as long as `run` runs (in `background.running`);
    `count` is how many the brokers acknowledged, over every topic."""

    def __init__(self, bootstrap: str, rates: Mapping[str, int]) -> None:
        self._bootstrap = bootstrap
        self._rates = dict(rates)
        self.counts = dict.fromkeys(self._rates, 0)

    @property
    def count(self) -> int:
        return sum(self.counts.values())

    def run(self, stop: threading.Event) -> None:
        while not stop.wait(1.0):
            for topic, rate in self._rates.items():
                produce_orders(self._bootstrap, topic, self.counts[topic], rate)
                self.counts[topic] += rate


def kafka_checks(
    bootstrap: str, orders: int, plan_differs: Callable[[], str | None], timeout: float = 60
) -> list[str]:
    """What a user of a Kafka Streams app would check after the walk: every one of `orders` counted once
    in the totals, and Kafka's own view of the group the operator's plan (`plan_differs` says what differs,
    None once nothing does; asked again for `timeout` seconds while the group settles)."""
    problems: list[str] = []
    totals = latest_totals(bootstrap, TOTALS, orders, timeout=timeout)
    if totals != expected_totals(orders):
        problems.append(f"the totals of {orders} orders are {totals}, not {expected_totals(orders)}")
    deadline = time.monotonic() + timeout
    while (differs := plan_differs()) is not None and time.monotonic() < deadline:
        time.sleep(1)
    return problems if differs is None else [*problems, differs]


def classic_plan_differs(
    bootstrap: str, work_dir: Path, publication: Publication | None
) -> Callable[[], str | None]:
    """For `kafka_checks` on the classic protocol: what differs between Kafka's view of the group (its
    members' partitions) and the published actives."""
    planned = {} if publication is None else publication.assignment
    plan = {pod: set(roles.active) for pod, roles in planned.items() if roles.active}
    reader = SampleApp(APP, NAMESPACE, bootstrap, None, work_dir)

    def differs() -> str | None:
        try:
            view = {pod: tasks for pod, tasks in reader.kafka_view().items() if tasks}
        except KafkaException:  # the group's coordinator is still loading, or moving
            view = {}
        return None if view == plan else f"Kafka's view of the group {view} is not the operator's plan {plan}"

    return differs


def kafka_summary(status: Mapping[str, Any]) -> str:
    """One line on what the operator read from Kafka."""
    kafka = status.get("kafka") or {}
    unavailable: Mapping[str, Any] = next(
        (c for c in status.get("conditions", []) if c.get("type") == "KafkaUnavailable"), {}
    )
    topics = ", ".join(kafka.get("rackTopics", [])) or "no topic"
    return (
        f"Kafka: racks of {topics} read from {kafka.get('brokers', 0)} brokers; "
        f"KafkaUnavailable={unavailable.get('status', 'absent')}; "
        f"cross-zone cost of the actives {(status.get('assignment') or {}).get('crossRackCost')}"
    )
