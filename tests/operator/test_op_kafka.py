"""The operator reading real Kafka brokers (`spec.kafka`): racks from `broker.rack`, changelog end offsets,
the consumer group, logins with PLAIN, TLS and OAUTHBEARER (tokens from a loopback identity provider),
`KafkaUnavailable` when Kafka is away, refuses the login or is misconfigured, and
`StreamsAssignorMissing` when an app on `group.protocol=streams` runs on brokers without smoothscale's
broker-side assignor."""

from __future__ import annotations

import base64
import itertools
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import Consumer, KafkaException
from confluent_kafka.admin import AdminClient  # type: ignore[attr-defined]
from op_testkit import NAMESPACE, Kubectl, actives, balanced, streamsapp, wait_for
from token_endpoint import TokenEndpoint

from smoothscale.operator.kafka.view import MISSING
from smoothscale.sandbox.emulator.memoryruntime import MemoryRuntime
from smoothscale.sandbox.kafka.broker import KafkaCluster
from smoothscale.sandbox.kafka.certs import server_certificate
from smoothscale.sandbox.kafka.topics import QUIET, create_topic, produce
from smoothscale.sandbox.kafka_streams import broker_assignor_jar

USER, PASSWORD = "orders", "orders-secret"
CLIENT_ID, CLIENT_SECRET = "orders-app", "orders-client-secret"
OperatorFactory = Callable[..., Any]


@pytest.fixture(scope="module")
def sasl_kafka(tmp_path_factory: pytest.TempPathFactory) -> Iterator[KafkaCluster]:
    """One broker that also takes SASL/PLAIN logins (user `orders`), OAUTHBEARER logins (unsigned JWTs) and
    TLS clients; stopped and started by a test here."""
    work_dir = tmp_path_factory.mktemp("kafka-sasl")
    with KafkaCluster(work_dir, sasl_users={USER: PASSWORD}, tls=True, oauthbearer=True) as cluster:
        yield cluster


@pytest.fixture(scope="module")
def plugin_kafka(tmp_path_factory: pytest.TempPathFactory) -> Iterator[KafkaCluster]:
    """One broker that loads smoothscale's broker-side streams assignor (KIP-1357)."""
    work_dir = tmp_path_factory.mktemp("kafka-plugin")
    with KafkaCluster(work_dir, work_dir / "logs", streams_assignor=broker_assignor_jar()) as cluster:
        yield cluster


def kafka_app(bootstrap: str, *, topic: str = "orders-input", strategy: str = "none", **kafka: Any) -> Any:
    app = streamsapp(replicas=3, partitions=6, standbys=0)
    subtopology = app["spec"]["topology"]["subtopologies"][0]
    subtopology["inputTopics"] = [topic]
    subtopology["stores"] = ["counts"]
    app["spec"]["assignment"]["rackAware"] = {"strategy": strategy, "trafficCost": 10, "nonOverlapCost": 1}
    app["spec"]["kafka"] = {"bootstrapServers": bootstrap, "refreshInterval": "1s", "timeout": "2s", **kafka}
    return app


def sasl_settings(secret: str) -> dict[str, Any]:
    return {"securityProtocol": "SASL_PLAINTEXT", "saslMechanism": "PLAIN", "secretRef": {"name": secret}}


def zone_of_pods(kube: Kubectl) -> dict[str, str]:
    zones = {}
    for name, pod in kube.pods().items():
        node = kube.core.read_node(pod.spec.node_name)
        zones[name] = node.metadata.labels["topology.kubernetes.io/zone"]
    return zones


def settled(kube: Kubectl) -> bool:
    stable = kube.condition("Stable")
    return stable.get("status") == "True" and balanced(kube.publication(), 3, 6)


def test_min_traffic_puts_actives_in_their_partitions_zones_read_from_broker_rack(
    kafka_racks: KafkaCluster, kube: Kubectl, fake: MemoryRuntime, run_operator: OperatorFactory
) -> None:
    # Partition p lives on node (p+1) % 3 + 1, so its zone is never the zone of pod p % 3.
    replicas = [[(p + 1) % 3 + 1] for p in range(6)]
    create_topic(kafka_racks.bootstrap_servers, "orders-input", 6, replicas=replicas)
    # the store's changelog, as Kafka Streams creates it at the app's first rebalance (the fake pods do not):
    # were it missing, its tasks' lags would be unknown and no active would move to its partition's zone
    create_topic(kafka_racks.bootstrap_servers, "orders-counts-changelog", 6)
    partition_zone = {f"0_{p}": kafka_racks.rack(nodes[0]) for p, nodes in enumerate(replicas)}
    with run_operator():
        kube.apply(kafka_app(kafka_racks.bootstrap_servers, strategy="none"))
        wait_for(
            lambda: (
                settled(kube) and (kube.status().get("kafka") or {}).get("rackTopics") == ["orders-input"]
            ),
            timeout=40,
            what="a stable plan with the racks read from Kafka",
        )
        none_cost = kube.status()["assignment"]["crossRackCost"]
        assert kube.status()["kafka"]["brokers"] == 3

        patch = {"spec": {"assignment": {"rackAware": {"strategy": "min_traffic"}}}}
        kube.patch_app("orders", patch)
        wait_for(
            lambda: settled(kube) and kube.status()["assignment"]["crossRackCost"] == 0,
            timeout=60,
            what="min_traffic without cross-zone reads",
        )
        zones = zone_of_pods(kube)
        placed = {task: zones[pod] for task, pod in actives(kube.publication()).items()}
    assert placed == partition_zone
    assert none_cost > 0


def test_changelog_end_offsets_and_the_consumer_group_are_read(
    kafka_broker: KafkaCluster, kube: Kubectl, fake: MemoryRuntime, run_operator: OperatorFactory
) -> None:
    bootstrap = kafka_broker.bootstrap_servers
    create_topic(bootstrap, "orders-counts-changelog", 6)
    produce(bootstrap, "orders-counts-changelog", {p: 5 * (p + 1) for p in range(6)})
    create_topic(bootstrap, "orders-input", 6)
    member = Consumer(
        {"bootstrap.servers": bootstrap, "group.id": "orders", "client.id": "orders-t1", **QUIET}
    )
    member.subscribe(["orders-input"])
    try:
        wait_for(lambda: member.poll(0.2) is None and member.assignment(), timeout=30, what="a group member")
        with run_operator():
            kube.apply(kafka_app(bootstrap))
            read = wait_for(
                lambda: (kube.status().get("kafka") or {}).get("group"), timeout=30, what="status.kafka.group"
            )
            kafka = kube.status()["kafka"]
    finally:
        member.close()
    assert kafka["changelogs"] == [
        {"topic": "orders-counts-changelog", "subtopology": "0", "endOffsets": 105, "unreadable": None}
    ]
    assert read["groupId"] == "orders" and read["state"] == "Stable" and read["protocol"] == "range"
    assert [(m["clientId"], m["partitions"]) for m in read["members"]] == [("orders-t1", 6)]
    assert kube.condition("KafkaUnavailable")["status"] == "False"


def test_a_deleted_changelog_is_named_on_the_app_and_the_others_are_still_read(
    kafka_broker: KafkaCluster, kube: Kubectl, fake: MemoryRuntime, run_operator: OperatorFactory
) -> None:
    """One changelog topic deleted under the app: its tasks' lags become unknown (`unknownlags`), the other
    changelogs are still read, and the app says which topic, why and what to do (`status.kafka.changelogs`,
    a ChangelogUnreadable Warning); once the topic is back, a ChangelogsReadable Event."""
    bootstrap = kafka_broker.bootstrap_servers
    for topic in ("faults-counts-changelog", "faults-totals-changelog"):
        create_topic(bootstrap, topic, 6)
        produce(bootstrap, topic, dict.fromkeys(range(6), 3))
    create_topic(bootstrap, "faults-input", 6)
    app = kafka_app(bootstrap, topic="faults-input", applicationId="faults")
    app["spec"]["topology"]["subtopologies"][0]["stores"] = ["counts", "totals"]

    def changelogs() -> dict[str, dict[str, Any]]:
        return {c["topic"]: c for c in (kube.status().get("kafka") or {}).get("changelogs") or []}

    with run_operator():
        kube.apply(app)
        wait_for(lambda: len(changelogs()) == 2, timeout=30, what="both changelogs read")
        admin = AdminClient({"bootstrap.servers": bootstrap, **QUIET})
        admin.delete_topics(["faults-totals-changelog"], operation_timeout=20)[
            "faults-totals-changelog"
        ].result(30)
        gone = wait_for(
            lambda: (
                MISSING in (changelogs().get("faults-totals-changelog", {}).get("unreadable") or "")
                and changelogs()["faults-totals-changelog"]["unreadable"]
            ),
            timeout=30,
            what="the deleted changelog named on the app",
        )
        read = changelogs()["faults-counts-changelog"]
        warnings = wait_for(
            lambda: [m for t, r, m in kube.events() if (t, r) == ("Warning", "ChangelogUnreadable")],
            timeout=10,
            what="a ChangelogUnreadable Event",
        )
        wait_for(lambda: recreated(bootstrap, "faults-totals-changelog"), timeout=30, what="the topic back")
        wait_for(
            lambda: changelogs().get("faults-totals-changelog", {"unreadable": 1})["unreadable"] is None,
            timeout=30,
            what="the changelog readable again",
        )
        wait_for(
            lambda: "ChangelogsReadable" in kube.reasons(), timeout=10, what="a ChangelogsReadable Event"
        )
    assert gone.startswith(
        "changelog topic faults-totals-changelog (subtopology 0) does not exist: its tasks' copies' lags are "
        "unknown, so none of them moves to another pod until it can be read; Kafka Streams creates"
    )
    assert read == {
        "topic": "faults-counts-changelog",
        "subtopology": "0",
        "endOffsets": 18,
        "unreadable": None,
    }
    # once per change, not per read (while the deletion was under way the topic may have been listed, its
    # offsets refused: the Warning then says it cannot be read)
    assert len(warnings) == 1 and warnings[0].startswith(
        "changelog topic faults-totals-changelog (subtopology 0) "
    )


def recreated(bootstrap: str, topic: str) -> bool:
    """Whether `topic` could be created (not while its deletion is still under way)."""
    try:
        create_topic(bootstrap, topic, 6)
    except KafkaException:
        return False
    return True


def test_an_unreachable_bootstrap_address_is_named_and_planning_goes_on(
    kube: Kubectl, fake: MemoryRuntime, run_operator: OperatorFactory
) -> None:
    with run_operator():
        kube.apply(kafka_app("127.0.0.1:1"))
        condition = kube.wait_condition("KafkaUnavailable", "KafkaUnavailable", status="True")
        wait_for(lambda: balanced(kube.publication(), 3, 6), timeout=30, what="a plan without Kafka")
        events = kube.events()
    assert condition["reason"] == "KafkaUnreachable"
    assert "127.0.0.1:1" in condition["message"] and "Connection refused" in condition["message"]
    assert any(
        kind == "Warning" and reason == "KafkaUnavailable" and "127.0.0.1:1" in message
        for kind, reason, message in events
    )


def test_a_missing_secret_and_a_refused_login_are_named_and_clear_once_fixed(
    sasl_kafka: KafkaCluster, kube: Kubectl, fake: MemoryRuntime, run_operator: OperatorFactory
) -> None:
    with run_operator():
        kube.apply(kafka_app(sasl_kafka.sasl_bootstrap_servers, **sasl_settings("orders-kafka")))
        missing = kube.wait_condition("KafkaUnavailable", "KafkaUnavailable (no Secret)", status="True")
        kube.put_secret("orders-kafka", {"username": USER, "password": "wrong-password"})
        refused = kube.wait_condition(
            "KafkaUnavailable",
            "KafkaUnavailable (login refused)",
            status="True",
            reason="KafkaAuthenticationFailed",
        )
        kube.put_secret("orders-kafka", {"username": USER, "password": PASSWORD})
        kube.wait_condition("KafkaUnavailable", "login", status="False")
        events = kube.events()
    assert missing["reason"] == "KafkaCredentialsInvalid"
    assert missing["message"] == f"Secret {NAMESPACE}/orders-kafka (spec.kafka.secretRef) does not exist"
    assert f"refused the login as user '{USER}' (PLAIN)" in refused["message"]
    assert PASSWORD not in refused["message"] and "wrong-password" not in refused["message"]
    # One Warning per cause, never one per round: on a loaded machine a login may also time out once, a
    # third cause with its own Event, but an unchanged cause is never announced twice in a row.
    warned = [text for kind, reason, text in events if (kind, reason) == ("Warning", "KafkaUnavailable")]
    assert any(message == missing["message"] for message in warned), warned
    assert any("refused the login" in message for message in warned), warned
    assert all(one != next_one for one, next_one in itertools.pairwise(warned)), warned
    assert any((kind, reason) == ("Normal", "KafkaAvailable") for kind, reason, _ in events)


def test_oauthbearer_logs_in_with_the_identity_providers_token_and_names_a_refused_client(
    sasl_kafka: KafkaCluster, kube: Kubectl, fake: MemoryRuntime, run_operator: OperatorFactory
) -> None:
    kube.put_secret("orders-oauth", {"clientId": CLIENT_ID, "clientSecret": "wrong-client-secret"})
    with TokenEndpoint(CLIENT_ID, CLIENT_SECRET) as idp, run_operator():
        oauth = {"tokenEndpointUrl": idp.url, "scope": "kafka orders.read", "extensions": {"pool": "p-1"}}
        settings = {
            "securityProtocol": "SASL_PLAINTEXT",
            "saslMechanism": "OAUTHBEARER",
            "secretRef": {"name": "orders-oauth"},
            "oauthbearer": oauth,
        }
        kube.apply(kafka_app(sasl_kafka.sasl_bootstrap_servers, **settings))
        refused = kube.wait_condition(
            "KafkaUnavailable",
            "KafkaUnavailable (token refused)",
            status="True",
            reason="KafkaAuthenticationFailed",
        )
        kube.put_secret("orders-oauth", {"clientId": CLIENT_ID, "clientSecret": CLIENT_SECRET})
        kube.wait_condition("KafkaUnavailable", "login", status="False")
        brokers = kube.status()["kafka"]["brokers"]
    assert refused["message"].startswith(
        f"no OAUTHBEARER token for OAuth client {CLIENT_ID!r} from {idp.url}: Failed to acquire SASL "
        "OAUTHBEARER token: "
    )
    assert "invalid_client" in refused["message"], "the identity provider's answer is quoted"
    assert "client-secret" not in refused["message"]
    assert brokers == 1, "read over the OAUTHBEARER login"
    # librdkafka's client-credentials grant: HTTP Basic with the Secret's id and secret, the scope asked
    assert {tuple(sorted(request.form.items())) for request in idp.requests} == {
        (("grant_type", "client_credentials"), ("scope", "kafka orders.read"))
    }
    granted = base64.b64encode(f"{CLIENT_ID}:{CLIENT_SECRET}".encode()).decode()
    assert any(request.authorization == f"Basic {granted}" for request in idp.requests)


def test_tls_trusts_the_ca_of_the_secret_and_names_a_certificate_it_cannot_verify(
    sasl_kafka: KafkaCluster, kube: Kubectl, fake: MemoryRuntime, run_operator: OperatorFactory
) -> None:
    assert sasl_kafka.certificate is not None
    kube.put_secret("orders-tls", {"ca.crt": server_certificate().ca_pem})  # another CA
    settings = {"securityProtocol": "SSL", "secretRef": {"name": "orders-tls"}}
    with run_operator():
        kube.apply(kafka_app(sasl_kafka.tls_bootstrap_servers, **settings))
        failed = kube.wait_condition("KafkaUnavailable", "KafkaUnavailable (unknown CA)", status="True")
        kube.put_secret("orders-tls", {"ca.crt": sasl_kafka.certificate.ca_pem})
        wait_for(lambda: kube.condition("KafkaUnavailable").get("status") == "False", timeout=30, what="TLS")
        brokers = kube.status()["kafka"]["brokers"]
    assert failed["reason"] == "KafkaTLSFailed" and "certificate verify failed" in failed["message"]
    assert sasl_kafka.tls_bootstrap_servers in failed["message"]
    assert brokers == 1


def test_kafka_unavailable_while_the_broker_is_stopped_keeps_the_last_facts(
    sasl_kafka: KafkaCluster,
    kube: Kubectl,
    fake: MemoryRuntime,
    run_operator: OperatorFactory,
    tmp_path: Path,
) -> None:
    bootstrap = sasl_kafka.bootstrap_servers
    create_topic(bootstrap, "orders-counts-changelog", 6)
    produce(bootstrap, "orders-counts-changelog", {0: 7})
    with run_operator():
        kube.apply(kafka_app(bootstrap))
        wait_for(
            lambda: (kube.status().get("kafka") or {}).get("changelogs"), timeout=30, what="a first read"
        )
        wait_for(lambda: balanced(kube.publication(), 3, 6), timeout=30, what="a plan")
        sasl_kafka.stop_node(1)
        try:
            condition = kube.wait_condition("KafkaUnavailable", "KafkaUnavailable", status="True")
            kept = kube.status()["kafka"]
            kube.patch_app("orders", {"spec": {"replicas": 2}})
            wait_for(lambda: balanced(kube.publication(), 2, 6), timeout=40, what="a scale-in without Kafka")
        finally:
            sasl_kafka.start_node(1)
        wait_for(lambda: kube.condition("KafkaUnavailable").get("status") == "False", timeout=40, what="back")
        reasons = [(kind, reason) for kind, reason, _ in kube.events()]
    assert condition["reason"] == "KafkaUnreachable" and bootstrap in condition["message"]
    assert kept["changelogs"][0]["endOffsets"] == 7
    assert ("Warning", "KafkaUnavailable") in reasons and ("Normal", "KafkaAvailable") in reasons


def test_a_streams_protocol_app_on_brokers_without_the_plugin_is_told_what_to_install(
    kafka_racks: KafkaCluster,
    plugin_kafka: KafkaCluster,
    kube: Kubectl,
    fake: MemoryRuntime,
    run_operator: OperatorFactory,
) -> None:
    def missing() -> dict[str, Any]:
        return kube.condition("StreamsAssignorMissing")

    with run_operator():
        kube.apply(kafka_app(kafka_racks.bootstrap_servers, groupProtocol="streams"))
        lacking = wait_for(
            lambda: missing().get("status") == "True" and missing(), timeout=30, what="StreamsAssignorMissing"
        )
        warned = [
            m for kind, reason, m in kube.events() if (kind, reason) == ("Warning", "StreamsAssignorMissing")
        ]
        kube.patch_app("orders", {"spec": {"kafka": {"bootstrapServers": plugin_kafka.bootstrap_servers}}})
        wait_for(
            lambda: missing().get("status") == "False", timeout=30, what="the plugin found on every broker"
        )
        loaded = missing()
        reasons = [(kind, reason) for kind, reason, _ in kube.events()]
    assert "broker(s) 1 (group.streams.assignors=sticky), 2 (" in lacking["message"], "every broker is read"
    assert ", 3 (group.streams.assignors=sticky) do not load" in lacking["message"]
    assert "io.smoothscale.broker.SmoothscaleTaskAssignor" in lacking["message"]
    assert "Installing the plugin" in lacking["message"] and "roll the brokers" in lacking["message"]
    assert warned == [lacking["message"]]
    assert loaded["reason"] == "PluginLoaded"
    assert ("Normal", "StreamsAssignorInstalled") in reasons
    assert kube.condition("KafkaUnavailable")["status"] == "False"
