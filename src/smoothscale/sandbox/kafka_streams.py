"""Real Kafka Streams instances of the Java sample app (`bridge/sample-app`, built by `.ci/bridge.sh`) for
tests and benchmarks: each one a JVM in its own process group, stopped with SIGTERM (then SIGKILL) by
whoever started it; its metrics read over HTTP; publications written through the Kubernetes API exactly as
the operator writes them; Kafka's own view of the group read with the admin API.

`KafkaStreamsCommand` runs the same JVM as the process of a kubelet stand-in's pod, for StreamsApps with
`spec.runtime: KafkaStreams` (`by_runtime`), so that the operator drives real Kafka Streams pods."""

from __future__ import annotations

import fcntl
import functools
import json
import os
import signal
import socket
import subprocess
import threading
import time
import urllib.request
from collections import deque
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import kubernetes
from confluent_kafka import OFFSET_BEGINNING, Consumer, Producer, TopicPartition
from confluent_kafka.cimpl import NewTopic

from smoothscale.contract.publication import Publication
from smoothscale.operator.appref import AppRef
from smoothscale.operator.publish import build_assignment_configmap
from smoothscale.resource import Runtime

from .api_links import ApiLinks
from .app_process import AppProcess
from .envexpansion import expand_words
from .group_view import group_actives
from .kafka import jars, topics
from .kafka.topics import QUIET
from .podruntime import Launch
from .processruntime import Command, CommandBuilder, pod_env

ROOT = Path(__file__).resolve().parents[3]
SAMPLE_JAR = ROOT / "bridge/sample-app/target/sample-app.jar"
SPRING_SAMPLE_JAR = ROOT / "bridge/spring-boot-app/target/spring-boot-sample.jar"
QUARKUS_SAMPLE_JAR = ROOT / "bridge/quarkus-app/target/quarkus-sample-runner.jar"
BROKER_ASSIGNOR_JAR = ROOT / "bridge/broker-assignor/target/smoothscale-broker-assignor.jar"
BRIDGE_JAR = ROOT / "bridge/smoothscale-streams/target/smoothscale-streams-0.1.0.jar"
_BRIDGE_JARS = (SAMPLE_JAR, SPRING_SAMPLE_JAR, QUARKUS_SAMPLE_JAR, BROKER_ASSIGNOR_JAR, BRIDGE_JAR)
"""What `.ci/bridge.sh` builds (each written anew by every build)."""
JAVA = ("java", "-Xmx384m", "-XX:+UseSerialGC", "-jar")
POD_JAVA = (*JAVA[:-1], "-XX:TieredStopAtLevel=1", "-jar")
"""A sandbox pod's JVM compiles with C1 only, as the sandbox's brokers do: the sample app's work is light, and
every pod start then spends less CPU compiling (the chaos benchmark starts a JVM per kill and several per
swap, on 2 shared cores)."""


def sample_jar() -> Path:
    """The sample app's runnable jar, built on first use with `.ci/bridge.sh` (Maven, the bridge's JUnit tests
    included), so that the README's test command needs no separate build step."""
    return _bridge_jar(SAMPLE_JAR)


STREAMS_PROTOCOL_CLIENT = "4.4.0"
"""The Kafka Streams client a sample pod on the streams protocol runs: Kafka Streams 4.3 sends no task offsets
in its heartbeats (its StreamsGroupHeartbeat is version 0), so the group coordinator, the plugin and the
operator would see no member's lag and no warmup would ever count as caught up; 4.4's does."""


def streams_protocol_app() -> AppProcess:
    """The sample app with Kafka Streams and Kafka's client of `STREAMS_PROTOCOL_CLIENT` ahead of its own
    (4.3.1, inside its jar) on the class path: what a sandbox pod on the streams protocol runs."""
    cache = jars.cache_root() / f"kafka-streams-{STREAMS_PROTOCOL_CLIENT}"
    wanted = [cache / f"{name}-{STREAMS_PROTOCOL_CLIENT}.jar" for name in ("kafka-streams", "kafka-clients")]
    for jar in wanted:
        if not jar.is_file():
            artifact = f"org.apache.kafka:{jar.name.removesuffix(f'-{STREAMS_PROTOCOL_CLIENT}.jar')}"
            subprocess.run(
                [
                    "mvn",
                    "-B",
                    "-q",
                    "dependency:copy",
                    f"-Dartifact={artifact}:{STREAMS_PROTOCOL_CLIENT}",
                    f"-DoutputDirectory={cache}",
                ],
                check=True,
                stdin=subprocess.DEVNULL,
                cwd=cache.parent,
            )
    return AppProcess((*wanted, sample_jar()), "io.smoothscale.sample.OrdersApp")


def spring_sample_jar() -> Path:
    """The Spring Boot sample's jar (`bridge/spring-boot-app`: the same topology, adopting smoothscale through
    its `application.properties` alone), built like `sample_jar`."""
    return _bridge_jar(SPRING_SAMPLE_JAR)


def quarkus_sample_jar() -> Path:
    """The Quarkus sample's uber-jar (`bridge/quarkus-app`: the same topology, adopting smoothscale through
    its `application.properties` alone), built like `sample_jar`."""
    return _bridge_jar(QUARKUS_SAMPLE_JAR)


def broker_assignor_jar() -> Path:
    """The jar of smoothscale's broker-side streams assignor (`bridge/broker-assignor`), built like
    `sample_jar`: what a sandbox broker puts on its class path (`KafkaCluster(streams_assignor=...)`)."""
    return _bridge_jar(BROKER_ASSIGNOR_JAR)


def bridge_jar() -> Path:
    """The bridge's own jar (`bridge/smoothscale-streams`, its dependencies shaded in), built like
    `sample_jar`: what the demo adds to a user's app that does not hold it yet."""
    return _bridge_jar(BRIDGE_JAR)


def _bridge_jar(jar: Path) -> Path:
    _bridge_built()
    if not jar.is_file():
        raise FileNotFoundError(f"{jar} is missing after `bash .ci/bridge.sh`")
    return jar


@functools.cache
def _bridge_built() -> None:
    """The bridge's jars built from the sources as they are, once per process (the sources do not change
    under a running test or demo). Under a lock, so that processes started together (a test run's workers,
    two demos) do not build into the same `target/` folders at once; Maven's output goes to standard error,
    so that a demo's standard output stays its report (`--json`'s last line is the figures)."""
    lock = ROOT / ".cache" / "bridge-build.lock"
    lock.parent.mkdir(parents=True, exist_ok=True)
    with lock.open("w") as held:
        fcntl.flock(held, fcntl.LOCK_EX)
        if _older_than_sources(_BRIDGE_JARS):
            subprocess.run(
                ["bash", str(ROOT / ".ci/bridge.sh")], check=True, stdin=subprocess.DEVNULL, stdout=2
            )


def _older_than_sources(jars: Iterable[Path]) -> bool:
    """Whether a jar is missing, or a file of the bridge's Maven projects changed after one was built: a
    checkout that pulled a change of the bridge would otherwise run its tests against the jars of before (a
    build left in `target/` is never rebuilt by itself)."""
    jars = list(jars)
    if not all(jar.is_file() for jar in jars):
        return True
    bridge = ROOT / "bridge"
    built = min(jar.stat().st_mtime for jar in jars)
    return any(
        path.stat().st_mtime > built
        for path in bridge.rglob("*")
        if path.is_file() and "target" not in path.relative_to(bridge).parts
    )


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@dataclass
class Instance:
    """One pod's Kafka Streams process."""

    pod: str
    metrics_port: int
    log: Path
    process: subprocess.Popen[bytes]
    metrics_path: str = "/metrics"
    """The bridge's own endpoint answers on any path; an app serving the metrics through Micrometer on its own
    path (Quarkus' `/q/metrics`)."""

    def scrape(self) -> str:
        """The metrics endpoint's text, as the operator scrapes it; "" when unreachable."""
        try:
            with urllib.request.urlopen(
                f"http://127.0.0.1:{self.metrics_port}{self.metrics_path}", timeout=2
            ) as response:
                return str(response.read().decode())
        except OSError:
            return ""

    def metrics(self) -> dict[str, float]:
        """Every sample of the metrics endpoint, keyed by its series (`name{labels}`); {} when unreachable."""
        samples: dict[str, float] = {}
        for line in self.scrape().splitlines():
            if line and not line.startswith("#"):
                series, _, value = line.rpartition(" ")
                samples[series] = float(value)
        return samples

    def generation(self) -> int | None:
        value = self.metrics().get("smoothscale_assignment_generation")
        return None if value is None else int(value)

    def stop(self, timeout: float = 30) -> None:
        if self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGTERM)
            try:
                self.process.wait(timeout)
            except subprocess.TimeoutExpired:
                os.killpg(self.process.pid, signal.SIGKILL)
                self.process.wait(10)

    def kill(self) -> None:
        if self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGKILL)
            self.process.wait(10)


@dataclass
class SampleApp:
    """The sample app's instances, its topics and its assignment ConfigMap."""

    app: str
    namespace: str
    bootstrap: str
    kubeconfig: Path | None
    work_dir: Path
    env: Mapping[str, str] = field(default_factory=dict)
    instances: dict[str, Instance] = field(default_factory=dict)
    process: AppProcess | None = None
    """What each instance runs instead of the sample app's jar (`streams_protocol_app()`: the sample app on
    Kafka Streams 4.4.0, for the streams protocol)."""

    def start(
        self,
        pod: str,
        *,
        bridged: bool = True,
        extra_env: Mapping[str, str] | None = None,
        jar: Path | None = None,
        metrics_path: str = "/metrics",
    ) -> Instance:
        """Start pod `pod`'s instance: the sample app's jar, or `jar` (the Spring Boot sample's, say), whose
        metrics are at `metrics_path` on the port it is given as SMOOTHSCALE_METRICS_PORT, or the app's
        `process`."""
        state_dir = self.work_dir / "state" / pod
        state_dir.mkdir(parents=True, exist_ok=True)
        port = free_port()
        env = {
            **os.environ,
            "SMOOTHSCALE_POD_NAME": pod,
            "SMOOTHSCALE_NAMESPACE": self.namespace,
            "SMOOTHSCALE_APP": self.app,
            "SMOOTHSCALE_STATE_DIR": str(state_dir),
            "SMOOTHSCALE_METRICS_HOST": "127.0.0.1",
            "SMOOTHSCALE_METRICS_PORT": str(port),
            "KAFKA_BOOTSTRAP_SERVERS": self.bootstrap,
            **({"SMOOTHSCALE_KUBECONFIG": str(self.kubeconfig)} if self.kubeconfig else {}),
            # Without the bridge the client is still named after the pod: Kafka's view is read by it.
            **({} if bridged else {"SMOOTHSCALE_BRIDGE": "off", "STREAMS_CLIENT_ID": pod}),
            **self.env,
            **(extra_env or {}),
        }
        log = self.work_dir / "logs" / f"{pod}.log"
        log.parent.mkdir(parents=True, exist_ok=True)
        with log.open("ab") as output:
            argv = (
                [*JAVA, str(jar or sample_jar())]
                if self.process is None or jar is not None
                else self.process.argv(JAVA[:-1], bridge_jar)
            )
            process = subprocess.Popen(
                argv,
                env=env,
                stdin=subprocess.DEVNULL,
                stdout=output,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        instance = Instance(pod, port, log, process, metrics_path)
        self.instances[pod] = instance
        return instance

    def stop_all(self) -> None:
        for instance in self.instances.values():
            instance.stop()

    def publish(self, api: kubernetes.client.CoreV1Api, publication: Publication) -> float:
        """Write `publication` as the operator does; the monotonic time the API acknowledged the write."""
        body = build_assignment_configmap(AppRef(self.namespace, self.app, "uid-test"), publication)
        body["metadata"].pop("ownerReferences")
        name = body["metadata"]["name"]
        try:
            api.read_namespaced_config_map(name, self.namespace)
        except kubernetes.client.ApiException as error:
            if error.status != 404:
                raise
            api.create_namespaced_config_map(self.namespace, body)  # type: ignore[arg-type]  # a dict is accepted
        else:
            api.patch_namespaced_config_map(name, self.namespace, body)
        return time.monotonic()

    def wait_generation(self, pods: Iterable[str], generation: int, timeout: float = 90) -> float:
        """Wait until every pod reports running `generation`; the monotonic time the last one did."""
        waiting = set(pods)
        deadline = time.monotonic() + timeout
        while waiting and time.monotonic() < deadline:
            waiting = {pod for pod in waiting if self.instances[pod].generation() != generation}
            if waiting:
                for pod in waiting:
                    if self.instances[pod].process.poll() is not None:
                        raise AssertionError(f"{pod} exited: see {self.instances[pod].log}")
                time.sleep(0.05)
        if waiting:
            seen = {pod: self.instances[pod].generation() for pod in waiting}
            raise AssertionError(f"pods {seen} did not run generation {generation} within {timeout} s")
        return time.monotonic()

    def kafka_view(self) -> dict[str, set[str]]:
        """Kafka's own view of who runs what: the active tasks each pod's consumers own in the group."""
        return group_actives(
            self.bootstrap, self.app, lambda topic: "1" if topic.endswith("by-customer-repartition") else "0"
        )


@dataclass(frozen=True)
class KafkaStreamsCommand:
    """The Java sample app (or the user's `app`) as a pod's process: the pod's environment (its `ORDERS_TOPIC`
    and `TOTALS_TOPIC`, say, and any `STREAMS_<NAME>` setting), plus where the stand-in put it (IP, metrics
    port, state volume) and how it reaches the API server and the broker. The user's app gets the container's
    `args` (expanded from its environment, as a kubelet does) after its main class."""

    kubeconfig: Path
    bootstrap: str
    links: ApiLinks | None = None
    """Each pod's own path to the API server (which a test can cut), instead of `kubeconfig` directly."""
    app: AppProcess | None = None
    """The user's own app (`smoothscale demo --kafka --app-jar`) instead of the sample app."""

    def __call__(self, launch: Launch) -> Command:
        own = pod_env(launch)
        variables = {**os.environ, **own}
        kubeconfig = (
            self.kubeconfig
            if self.links is None
            else self.links.kubeconfig_for(launch.pod["metadata"]["name"], launch.ip)
        )
        variables.update(
            {
                "SMOOTHSCALE_KUBECONFIG": str(kubeconfig),
                "SMOOTHSCALE_METRICS_HOST": launch.ip,
                "KAFKA_BOOTSTRAP_SERVERS": self.bootstrap,
            }
        )
        if self.app is None:
            return Command([*POD_JAVA, str(sample_jar())], variables)
        # The JVM with the app's jars stands in for the image; the container's args are the app's own.
        args = expand_words(launch.pod["spec"]["containers"][0].get("args") or [], own)
        return Command([*self.app.argv(POD_JAVA[:-1], bridge_jar), *args], variables)


def by_runtime(client_library: CommandBuilder, kafka_streams: CommandBuilder) -> CommandBuilder:
    """A command builder that runs each pod as its StreamsApp's `spec.runtime` says."""

    def command(launch: Launch) -> Command:
        if launch.settings.runtime == Runtime.KAFKA_STREAMS:
            return kafka_streams(launch)
        return client_library(launch)

    return command


def describe_streams_group(bootstrap: str, group: str, timeout: float = 60) -> dict[str, Any] | None:
    """Kafka's own view of a streams group (KIP-1071): `Admin.describeStreamsGroups`, which no Python client
    has, through the plugin jar's `GroupView` tool run with the broker's jars. Members carry `pod`,
    `assignment` and `targetAssignment` (`active`, `standby`, `warmup` task ids), `taskOffsets`, ...;
    None while the group does not exist."""
    result = subprocess.run(
        [*_group_view(), bootstrap, group],
        capture_output=True,
        text=True,
        timeout=timeout,
        stdin=subprocess.DEVNULL,
        check=False,
    )
    if result.returncode != 0:
        raise RuntimeError(
            f"describing streams group {group} failed ({result.returncode}): {result.stderr[-2000:]}"
        )
    view: dict[str, Any] | None = json.loads(result.stdout.strip().splitlines()[-1])["groups"][group]
    return view


def _group_view() -> list[str]:
    """The command of the plugin jar's `GroupView` tool, run with the broker's jars."""
    classpath = f"{jars.classpath(jars.install())}{os.pathsep}{broker_assignor_jar()}"
    return [*JAVA[:-1], "-XX:TieredStopAtLevel=1", "-cp", classpath, "io.smoothscale.broker.GroupView"]


class StreamsGroupWatch:
    """Kafka's view of streams groups sampled every `interval_ms` by one `GroupView --watch-ms` JVM: the last
    `history` samples kept (all: None) as (monotonic time, {group: view or None}). A context manager; stops
    the JVM on exit."""

    def __init__(
        self, bootstrap: str, groups: Iterable[str], interval_ms: int = 250, history: int | None = None
    ) -> None:
        self.samples: deque[tuple[float, dict[str, Any]]] = deque(maxlen=history)
        self._process = subprocess.Popen(
            [*_group_view(), "--watch-ms", str(interval_ms), bootstrap, *groups],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
            start_new_session=True,
        )
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        assert self._process.stdout is not None
        for line in self._process.stdout:
            if line.startswith("{"):
                self.samples.append((time.monotonic(), json.loads(line)["groups"]))

    def latest(self, group: str) -> dict[str, Any] | None:
        view: dict[str, Any] | None = self.samples[-1][1].get(group) if self.samples else None
        return view

    def __enter__(self) -> StreamsGroupWatch:
        return self

    def __exit__(self, *_: object) -> None:
        if self._process.poll() is None:
            os.killpg(self._process.pid, signal.SIGKILL)
            self._process.wait(10)


def create_topics(bootstrap: str, partitions: Mapping[str, int], replication: int = 1) -> None:
    """Create each topic with its number of partitions and `replication` replicas."""
    wanted = [NewTopic(name, count, replication) for name, count in partitions.items()]
    topics.create_topics(bootstrap, wanted)


def create_sample_topics(
    bootstrap: str, suffix: str, partitions: int, replication: int = 1
) -> tuple[str, str]:
    """The sample app's input and output topics for one run (`orders-<suffix>`, `totals-<suffix>`), created
    with `partitions` each (and `replication` replicas): the names its `ORDERS_TOPIC` and `TOTALS_TOPIC`
    take."""
    orders, totals = f"orders-{suffix}", f"totals-{suffix}"
    create_topics(bootstrap, {orders: partitions, totals: partitions}, replication)
    return orders, totals


def read_committed(bootstrap: str, topic: str, idle_seconds: float = 5, timeout: float = 120) -> list[Any]:
    """Every committed record of `topic` as (key, value) pairs, once no new one came for `idle_seconds`."""
    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": f"reader-{topic}-{time.monotonic_ns()}",
            "auto.offset.reset": "earliest",
            "isolation.level": "read_committed",
            **QUIET,
        }
    )
    consumer.subscribe([topic])
    records: list[Any] = []
    deadline = time.monotonic() + timeout
    last = time.monotonic()
    try:
        while time.monotonic() < deadline and time.monotonic() - last < idle_seconds:
            message = consumer.poll(0.5)
            if message is not None and message.error() is None:
                key, value = message.key(), message.value()
                records.append((key.decode() if key else "", value.decode() if value else ""))
                last = time.monotonic()
    finally:
        consumer.close()
    return records


def read_whole(bootstrap: str, topic: str, timeout: float = 120) -> list[tuple[str, str]]:
    """Every record of `topic` up to the end offsets it had when called, as (key, value) pairs: exact for a
    topic written without transactions (an input topic), where `read_committed`'s idle wait can stop early on
    a loaded machine. Raises TimeoutError when the end is not reached within `timeout` seconds."""
    consumer = Consumer(
        {"bootstrap.servers": bootstrap, "group.id": f"whole-{topic}-{time.monotonic_ns()}", **QUIET}
    )
    try:
        metadata = consumer.list_topics(topic, timeout=30).topics[topic]
        ends = {
            p: consumer.get_watermark_offsets(TopicPartition(topic, p), timeout=30)[1]
            for p in metadata.partitions
        }
        consumer.assign([TopicPartition(topic, p, OFFSET_BEGINNING) for p, end in ends.items() if end > 0])
        left = {p for p, end in ends.items() if end > 0}
        records: list[tuple[str, str]] = []
        deadline = time.monotonic() + timeout
        while left:
            if time.monotonic() > deadline:
                raise TimeoutError(
                    f"{topic}: partitions {sorted(left)} not read to their end within {timeout} s"
                )
            message = consumer.poll(0.5)
            if message is None or message.error() is not None:
                continue
            partition, offset = message.partition(), message.offset()
            if partition is None or offset is None:
                continue
            if partition in left and offset < ends[partition]:
                key, value = message.key(), message.value()
                records.append((key.decode() if key else "", value.decode() if value else ""))
            if offset + 1 >= ends[partition]:
                left.discard(partition)
        return records
    finally:
        consumer.close()


CUSTOMERS = 10
"""The customers the tests' orders go to (order i to customer i mod 10), so that totals add up."""


def produce_orders(
    bootstrap: str, topic: str, first: int, count: int, value: Callable[[int], str] | None = None
) -> None:
    """Orders `first` .. `first + count - 1`, each keyed by its id, valued `value(i)` (by default
    `order_value(i)`: `customer-<i mod 10>:<i mod 7 + 1>`)."""
    # Idempotent: a send librdkafka retries after a broker restart is written once.
    producer = Producer({"bootstrap.servers": bootstrap, "acks": "all", "enable.idempotence": True, **QUIET})
    for index in range(first, first + count):
        producer.produce(topic, key=f"order-{index}".encode(), value=(value or order_value)(index).encode())
    if producer.flush(30) != 0:
        raise RuntimeError(f"orders {first}..{first + count - 1} were not all acknowledged")


def order_value(index: int) -> str:
    return f"customer-{index % CUSTOMERS}:{index % 7 + 1}"


def unique_order_value(index: int) -> str:
    """Order `index` with an amount no other order has (`index + 1`): a customer's total amount then tells a
    lost order from another counted twice, which `order_value`'s seven amounts cannot (orders 70 apart share
    customer and amount)."""
    return f"customer-{index % CUSTOMERS}:{index + 1}"


def expected_totals(count: int) -> dict[str, str]:
    """Each customer's `"<orders>,<amount>"` once orders 0 .. count - 1 are each counted once."""
    return totals_of(order_value(index) for index in range(count))


def totals_of(orders: Iterable[str]) -> dict[str, str]:
    """Each customer's `"<orders>,<amount>"` once each of `orders` (values `customer-<i>:<amount>`, as the
    orders topic holds them) is counted once."""
    totals: dict[str, list[int]] = {}
    for order in orders:
        customer, amount = order.split(":")
        entry = totals.setdefault(customer, [0, 0])
        entry[0] += 1
        entry[1] += int(amount)
    return {customer: f"{orders},{amount}" for customer, (orders, amount) in totals.items()}


def latest_totals(
    bootstrap: str,
    topic: str,
    count: int,
    timeout: float = 120,
    *,
    expected: Mapping[str, str] | None = None,
) -> dict[str, str]:
    """The newest total per customer in `topic`, read until they are `expected` (by default
    `expected_totals(count)`) or `timeout` seconds passed."""
    wanted = dict(expected) if expected is not None else expected_totals(count)
    latest: dict[str, str] = {}
    deadline = time.monotonic() + timeout
    while latest != wanted and time.monotonic() < deadline:
        latest.update(dict(read_committed(bootstrap, topic, idle_seconds=3)))
    return latest
