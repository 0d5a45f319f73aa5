"""From a read of Kafka to the planner's inputs and the client's settings: the pure parts (no broker)."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest

from smoothscale.contract.publication import EMPTY
from smoothscale.control.snapshot import build_snapshot, changelog_sizes
from smoothscale.operator.kafka.observer import availability_events
from smoothscale.operator.kafka.reader import KafkaReadError
from smoothscale.operator.kafka.settings import KafkaSettingsError, client_config
from smoothscale.operator.kafka.view import (
    ClusterView,
    changelog_offsets,
    changelog_owners,
    changelog_store,
    facts,
    topic_racks,
)
from smoothscale.resource import KafkaSpec, StreamsAppSpec, load_spec, spec_problems

NOW = datetime(2026, 11, 24, 8, 0, tzinfo=UTC)


def spec(**extra: Any) -> StreamsAppSpec:
    raw: dict[str, Any] = {
        "template": {"spec": {"containers": [{"name": "app", "image": "x"}]}},
        "topology": {
            "subtopologies": [
                {"name": "0", "partitions": 3, "inputTopics": ["clicks"]},
                {"name": "1", "partitions": 3, "inputTopics": ["views"], "stores": ["totals"]},
                {"name": "2", "partitions": 2, "stateful": False},
            ]
        },
        **extra,
    }
    return load_spec(raw)


def test_changelog_names_give_the_store_of_this_app_only() -> None:
    assert changelog_store("orders", "orders-counts-changelog") == "counts"
    assert changelog_store("orders", "orders-KSTREAM-AGGREGATE-STATE-STORE-0000000003-changelog") == (
        "KSTREAM-AGGREGATE-STATE-STORE-0000000003"
    )
    assert changelog_store("orders", "ordersx-counts-changelog") is None
    assert changelog_store("orders", "orders-counts-repartition") is None
    assert changelog_store("orders", "orders--changelog") is None


def test_racks_are_the_zones_of_each_partitions_replicas() -> None:
    view = ClusterView(
        read_at=NOW,
        brokers={1: "zone-a", 2: "zone-b", 3: None},
        replicas={"clicks": [[1, 2], [2, 3], [3]], "views": [[3], [3], [3]]},
        end_offsets={},
    )
    # Broker 3 has no rack: it adds nothing, and a topic only on it has no rack information at all.
    assert topic_racks(view) == {"clicks": [["zone-a", "zone-b"], ["zone-b"], []]}


def test_a_changelog_belongs_to_the_subtopology_listing_its_store_else_to_the_only_one_that_fits() -> None:
    app = spec()
    partitions = {
        "orders-totals-changelog": 3,  # store listed by subtopology 1
        "orders-counts-changelog": 3,  # unlisted: subtopology 0 is the only stateful one without stores
        "orders-other-changelog": 5,  # no subtopology has 5 partitions
        "payments-counts-changelog": 3,  # another app's
    }
    owners, unmapped = changelog_owners(app, "orders", partitions)
    assert owners == {"orders-totals-changelog": "1", "orders-counts-changelog": "0"}
    assert unmapped == ["orders-other-changelog"]


def test_an_ambiguous_changelog_is_unmapped_rather_than_guessed() -> None:
    app = spec()
    both = app.model_copy(
        update={
            "topology": app.topology.model_copy(
                update={
                    "subtopologies": [s.model_copy(update={"stores": []}) for s in app.topology.subtopologies]
                }
            )
        }
    )
    assert changelog_owners(both, "orders", {"orders-counts-changelog": 3}) == (
        {},
        ["orders-counts-changelog"],
    )


def test_task_sizes_sum_the_end_offsets_of_their_changelog_partitions() -> None:
    owners = {"orders-a-changelog": "0", "orders-b-changelog": "0", "orders-totals-changelog": "1"}
    ends = {
        "orders-a-changelog": [10, 0, 5],
        "orders-b-changelog": [1, 2, 3],
        "orders-totals-changelog": [7, 8, 9],
    }
    assert changelog_offsets(owners, ends) == {"0_0": 11, "0_1": 2, "0_2": 8, "1_0": 7, "1_1": 8, "1_2": 9}


def test_kafkas_sizes_replace_the_pods_reports_and_spec_racks_override_kafkas() -> None:
    app = spec(racks={"views": [["zone-c"], ["zone-c"], ["zone-c"]]})
    view = ClusterView(
        read_at=NOW,
        brokers={1: "zone-a", 2: "zone-b"},
        replicas={"clicks": [[1], [2], [1]], "views": [[1], [1], [1]]},
        end_offsets={"orders-totals-changelog": [100, 200, 300]},
    )
    read = facts(app, "orders", view)
    reported = {"1_0": 90, "0_0": 40}  # the largest end offsets the pods reported
    sizes = changelog_sizes(reported, read.changelog_offsets)
    tasks = {t.id: t for t in build_snapshot(app, NOW, [], EMPTY, sizes, racks=read.racks).tasks}
    assert [tasks[f"1_{p}"].changelog_offsets for p in range(3)] == [100, 200, 300]
    assert tasks["0_0"].changelog_offsets == 40  # no changelog read for subtopology 0: the pods' figure
    assert [tasks[f"0_{p}"].input_partition_racks for p in range(3)] == [
        [["zone-a"]],
        [["zone-b"]],
        [["zone-a"]],
    ]
    assert tasks["1_0"].input_partition_racks == [["zone-c"]]  # spec.racks wins over Kafka
    assert read.status is not None and read.status.rack_topics == ["clicks", "views"]


def test_settings_take_credentials_from_the_secret_and_name_a_missing_key() -> None:
    kafka = KafkaSpec.model_validate(
        {
            "bootstrapServers": "k-0:9093",
            "securityProtocol": "SASL_SSL",
            "saslMechanism": "SCRAM-SHA-512",
            "secretRef": {"name": "creds", "passwordKey": "pw"},
        }
    )
    config = client_config(kafka, {"username": b"alice", "pw": b"s3cret", "ca.crt": b"PEM"})
    assert config["sasl.username"] == "alice" and config["sasl.password"] == "s3cret"
    assert config["sasl.mechanism"] == "SCRAM-SHA-512" and config["ssl.ca.pem"] == "PEM"
    with pytest.raises(
        KafkaSettingsError, match=r"Secret creds has no key 'pw' \(spec.kafka.secretRef.passwordKey\)"
    ):
        client_config(kafka, {"username": b"alice", "password": b"s3cret"})
    with pytest.raises(KafkaSettingsError, match=r"has 'tls\.crt' but not 'tls\.key'"):
        client_config(kafka, {"username": b"a", "pw": b"b", "tls.crt": b"PEM"})


def test_sasl_without_mechanism_or_secret_is_an_invalid_spec() -> None:
    base = spec().model_dump(mode="json")
    base["kafka"] = {"bootstrapServers": "k-0:9092", "securityProtocol": "SASL_PLAINTEXT"}
    assert spec_problems(base) == [
        "spec.kafka.saslMechanism: is required with securityProtocol SASL_PLAINTEXT",
        "spec.kafka.secretRef: is required with securityProtocol SASL_PLAINTEXT (for the SASL credentials)",
    ]
    base["kafka"] = {"bootstrapServers": "kafka:9092/x"}
    assert spec_problems(base)[0].startswith("spec.kafka.bootstrapServers: ")


def test_one_warning_per_failure_and_one_notice_on_recovery() -> None:
    kafka = KafkaSpec(bootstrap_servers="k-0:9092")
    down = KafkaReadError("KafkaUnreachable", "cannot reach Kafka at k-0:9092 (after 3ms)")
    again = KafkaReadError("KafkaUnreachable", "cannot reach Kafka at k-0:9092 (after 5ms)")
    assert [e.reason for e in availability_events(None, down, kafka)] == ["KafkaUnavailable"]
    assert availability_events(down, again, kafka) == []
    assert [e.reason for e in availability_events(again, None, kafka)] == ["KafkaAvailable"]
    assert availability_events(None, None, kafka) == []
