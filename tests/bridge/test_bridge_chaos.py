"""A short chaos run on real Kafka Streams under the operator (issue 25; `benchmarks/streams_chaos.py` runs
100 faults): the group leader's pod cut off from the API server while the app scales, and the API server
stopped in the middle of a scale-out (kills, broker restarts and swaps are `test_bridge_operator.py`'s and
the benchmark's). After each the app settles again; at the end every order is counted exactly once, no task
was ever active on two pods in Kafka's view of the group, and the final assignment is the operator's plan."""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from smoothscale.sandbox.addresses import random_block
from smoothscale.sandbox.harness import Sandbox
from smoothscale.sandbox.kafka.broker import KafkaCluster
from smoothscale.sandbox.kafka_streams import create_sample_topics, order_value, produce_orders, read_whole
from smoothscale.sandbox.streams_chaos import PARTITIONS, REPLICATION, ChaosTimes, run_chaos

# With a third fault (a lost volume) it took 5 minutes on 2 cores under a load average of 50.
pytestmark = [pytest.mark.slow, pytest.mark.timeout(900)]

FAULTS = ["leader_cut_off", "api_server_down"]


def test_the_app_rides_out_its_leader_cut_off_from_the_api_server_and_an_api_server_outage(
    kafka_racks: KafkaCluster, tmp_path: Path
) -> None:
    suffix = tmp_path.name[-12:].replace("_", "-").strip("-")
    topics = create_sample_topics(kafka_racks.bootstrap_servers, suffix, PARTITIONS, REPLICATION)
    with Sandbox(
        tmp_path / "sandbox",
        kafka_bootstrap=kafka_racks.bootstrap_servers,
        first_address=random_block(),
        api_links=True,
    ) as sandbox:
        result = run_chaos(
            sandbox,
            kafka_racks,
            topics,
            FAULTS,
            random.Random(25),
            ChaosTimes(api_down_seconds=15, cut_seconds=15, settle_timeout=300),
            log=print,
        )
    assert result["faults_by_kind"] == dict.fromkeys(FAULTS, 1)
    assert result["unsettled"] == [], "the app settled after every fault"
    assert result["lost_or_duplicated_records"] == 0, result["wrong_totals"]
    assert result["totals_regressed"] == 0, result["totals_regressed_seen"]
    assert result["double_actives"] == 0, result["double_actives_seen"]
    assert result["double_active_samples"] > 20, "Kafka's view of the group was sampled throughout"
    assert result["final_equals_plan"], result


def test_the_input_is_read_to_the_end_it_had(kafka_racks: KafkaCluster, tmp_path: Path) -> None:
    """The totals the chaos run expects come from the input topic itself: read to the end offsets it had, not
    until no record came for a while (which a loaded machine can cut short)."""
    bootstrap = kafka_racks.bootstrap_servers
    orders, _ = create_sample_topics(bootstrap, tmp_path.name[-12:].replace("_", "-").strip("-"), PARTITIONS)
    produce_orders(bootstrap, orders, 0, 500)
    read = read_whole(bootstrap, orders)
    produce_orders(bootstrap, orders, 500, 10)  # after the call: not read
    assert sorted(value for _, value in read) == sorted(order_value(i) for i in range(500))
    assert len({key for key, _ in read}) == 500
