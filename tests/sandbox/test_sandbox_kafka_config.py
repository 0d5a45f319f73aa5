"""A sandbox broker's listeners: the loopback ones, and the one a real node's pods reach through a forward."""

from __future__ import annotations

from pathlib import Path

import pytest

from smoothscale.sandbox.kafka.config import NodeConfig, NodePorts, server_properties


def _node(forwarded: int | None = None) -> NodeConfig:
    return NodeConfig(
        1, "zone-a", Path("/data"), NodePorts(client=9092, controller=9093, forwarded=forwarded)
    )


def test_a_forwarded_listener_binds_loopback_and_advertises_the_forwarding_address() -> None:
    node = _node(forwarded=9094)
    properties = server_properties(node, [node], advertise="10.244.27.1")
    assert properties["listeners"].split(",") == [
        "PLAINTEXT://127.0.0.1:9092",
        "FORWARDED://127.0.0.1:9094",
        "CONTROLLER://127.0.0.1:9093",
    ]
    assert properties["advertised.listeners"].split(",") == [
        "PLAINTEXT://127.0.0.1:9092",
        "FORWARDED://10.244.27.1:9094",
    ]
    assert "FORWARDED:PLAINTEXT" in properties["listener.security.protocol.map"].split(",")
    assert properties["inter.broker.listener.name"] == "PLAINTEXT", "brokers talk to each other on loopback"


def test_without_an_address_to_advertise_every_listener_is_loopback() -> None:
    node = _node()
    properties = server_properties(node, [node])
    assert "FORWARDED" not in properties["listeners"]
    assert properties["advertised.listeners"] == "PLAINTEXT://127.0.0.1:9092"


def test_an_address_to_advertise_needs_a_port_for_it() -> None:
    node = _node()
    with pytest.raises(ValueError, match="node 1 has an advertised address but no port"):
        server_properties(node, [node], advertise="10.244.27.1")
