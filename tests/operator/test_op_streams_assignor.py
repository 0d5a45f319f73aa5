"""An app on `group.protocol=streams` whose brokers do not all load smoothscale's assignor is never left in
silence: the control core's step gives it the `StreamsAssignorMissing` condition, naming the brokers and
what they load, and a Warning Event saying how to install the plugin; once every broker loads it the
condition clears and a Normal Event says so. Apps on the classic protocol get no such condition."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import UTC, datetime, timedelta
from typing import Any

from smoothscale.assignor.models import Plan, Snapshot
from smoothscale.contract import streams_protocol as names
from smoothscale.contract.publication import EMPTY
from smoothscale.control import step as control_step
from smoothscale.resource import load_spec

NOW = datetime(2026, 11, 26, 12, 0, tzinfo=UTC)
WITH_PLUGIN = f"sticky,{names.ASSIGNOR_CLASS}"


def spec(protocol: str | None) -> Any:
    kafka: dict[str, Any] = {"bootstrapServers": "kafka:9092"}
    if protocol is not None:
        kafka["groupProtocol"] = protocol
    return load_spec(
        {
            "replicas": 0,
            "runtime": "KafkaStreams",
            "template": {"spec": {"containers": [{"name": "app", "image": "orders:1"}]}},
            "topology": {"subtopologies": [{"name": "0", "partitions": 3}]},
            "kafka": kafka,
        }
    )


def observe(protocol: str | None, assignors: Mapping[int, str | None] | None, at: int) -> Any:
    return control_step.Observation(
        now=NOW + timedelta(seconds=at),
        app="orders",
        spec=spec(protocol),
        problems=None,
        spec_generation=1,
        status_generation=0,
        previous_status=None,
        pods=[],
        zones={},
        results={},
        published=EMPTY,
        kafka=control_step.KafkaView(streams_assignors=assignors, read_once=assignors is not None),
    )


def planner(snapshot: Snapshot) -> Plan:
    raise AssertionError("no pods: no plan")


def rounds(protocol: str | None, *reads: Mapping[int, str | None] | None) -> list[tuple[Any, list[Any]]]:
    """(the condition, the Events) of one round per read of the brokers."""
    memory = control_step.initial_memory(NOW)
    seen = []
    for at, assignors in enumerate(reads):
        decisions, memory, _ = control_step.step_planning_inline(
            memory, observe(protocol, assignors, at), control_step.RoundConfig(), planner
        )
        assert decisions.status is not None
        condition = decisions.status.condition("StreamsAssignorMissing")
        seen.append((condition, list(decisions.events)))
    return seen


def test_a_broker_without_the_plugin_is_named_with_what_to_do_and_the_fix_is_announced() -> None:
    lacking = {1: WITH_PLUGIN, 2: "sticky", 3: None}
    unread, missing, still, cluster_changed, fixed = rounds(
        "streams", None, lacking, lacking, None, {1: WITH_PLUGIN, 2: WITH_PLUGIN, 3: WITH_PLUGIN}
    )
    assert unread[0] is not None and unread[0].status == "Unknown" and not unread[1]
    condition, events = missing
    assert condition is not None and (condition.status, condition.reason) == (
        "True",
        "StreamsAssignorMissing",
    )
    assert "group.protocol=streams" in condition.message
    assert "broker(s) 2 (group.streams.assignors=sticky), 3 (" in condition.message
    assert "Kafka before 4.4" in condition.message and "1 (" not in condition.message
    assert f"group.streams.assignors=sticky,{names.ASSIGNOR_CLASS}" in condition.message, "what to do"
    assert [(e.type, e.reason) for e in events] == [("Warning", "StreamsAssignorMissing")]
    assert events[0].message == condition.message
    assert still[1] == [], "one Event when it starts, not one per round"
    assert cluster_changed[1] == [] and cluster_changed[0].status == "Unknown"
    condition, events = fixed
    assert condition is not None and (condition.status, condition.reason) == ("False", "PluginLoaded")
    assert [(e.type, e.reason) for e in events] == [("Normal", "StreamsAssignorInstalled")]


def test_every_broker_with_the_plugin_raises_nothing() -> None:
    ((condition, events),) = rounds("streams", {1: WITH_PLUGIN, 2: f" {names.ASSIGNOR_CLASS} ,sticky"})
    assert condition is not None and condition.status == "False" and events == []


def test_a_classic_app_is_not_checked() -> None:
    for protocol in (None, "classic"):
        ((condition, events),) = rounds(protocol, {1: "sticky"})
        assert condition is None and events == []
