"""`spec.runtime: KafkaStreams`: each plan is published at once, because Kafka's cooperative rebalance
(through the smoothscale-streams bridge) revokes a moved task before it starts elsewhere; the client
library's runtime keeps the two-generation hand-over."""

from __future__ import annotations

import pytest

from smoothscale.contract.publication import ClientAssignment, Publication
from smoothscale.control.handover import next_generation
from smoothscale.resource import InvalidSpecError, Runtime, load_spec

PUBLISHED = Publication(
    generation=4,
    assignment={
        "orders-0": ClientAssignment(active=["0_0", "0_1"]),
        "orders-1": ClientAssignment(active=[], warmup=["0_1"]),
    },
)
DESIRED = {"orders-0": ClientAssignment(active=["0_0"]), "orders-1": ClientAssignment(active=["0_1"])}
ALIVE = {"orders-0", "orders-1"}
ACKED = {"orders-0": 4, "orders-1": 4}


def spec(**extra: object) -> dict[str, object]:
    return {
        "template": {"spec": {"containers": [{"name": "app", "image": "orders:1"}]}},
        "topology": {"subtopologies": [{"name": "0", "partitions": 2, "inputTopics": ["orders"]}]},
        **extra,
    }


def test_a_kafka_streams_app_gets_the_move_in_one_generation() -> None:
    moved = next_generation(PUBLISHED, DESIRED, ACKED, ALIVE, 4, kafka_rebalances=True)
    assert moved == Publication(generation=5, assignment=DESIRED)
    published_again = next_generation(
        moved, DESIRED, {"orders-0": 5, "orders-1": 5}, ALIVE, 5, kafka_rebalances=True
    )
    assert published_again is None, "an unchanged plan is not published again"


def test_the_client_librarys_runtime_still_revokes_first() -> None:
    revoking = next_generation(PUBLISHED, DESIRED, ACKED, ALIVE, 4)
    assert revoking is not None
    assert revoking.revoking["0_1"].owner == "orders-0"
    assert "0_1" not in revoking.assignment["orders-1"].active


def test_the_runtime_defaults_to_the_client_library_and_names_a_wrong_value() -> None:
    assert load_spec(spec()).runtime is Runtime.CLIENT_LIBRARY
    assert load_spec(spec(runtime="KafkaStreams")).runtime is Runtime.KAFKA_STREAMS
    with pytest.raises(InvalidSpecError, match="runtime"):
        load_spec(spec(runtime="Spark"))
