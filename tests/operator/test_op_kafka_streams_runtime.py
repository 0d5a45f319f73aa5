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


def test_a_kafka_streams_app_recovers_from_a_deleted_configmap_at_once() -> None:
    """The assignment ConfigMap deleted under a Kafka Streams app: the operator wrote an empty "barrier"
    generation and waited for every pod to apply it, but a bridge applies a generation only when its tasks
    follow it, and Kafka Streams never runs without its tasks: no pod acknowledged, nothing was published
    again, and the app was stuck on Kafka's own assignment. Kafka's rebalance keeps a task off two pods, so
    the plan is published again at once, above every generation seen."""
    lost = Publication(generation=0)
    rebuilt = next_generation(lost, DESIRED, ACKED, ALIVE, 4, kafka_rebalances=True)
    assert rebuilt == Publication(generation=5, assignment=DESIRED)
    # An empty barrier already written (by an operator before this fix) is not waited on either.
    barrier = Publication(generation=5)
    after = next_generation(barrier, DESIRED, ACKED, ALIVE, 5, kafka_rebalances=True)
    assert after == Publication(generation=6, assignment=DESIRED)
    # With nothing planned yet, the barrier still keeps the generations above the pods' own.
    assert next_generation(lost, None, ACKED, ALIVE, 4, kafka_rebalances=True) == Publication(generation=5)
    # The client library's pods still wait on the barrier: a pod may run anything a lost generation gave it.
    assert next_generation(barrier, DESIRED, ACKED, ALIVE, 5) is None


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
