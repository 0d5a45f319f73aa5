"""A sandbox broker's `server.properties`: KRaft combined mode (broker and controller in one JVM) on loopback.

Pure: ports, racks and folders in, properties out. Every node is a voter of a static controller quorum
(`controller.quorum.voters`), so one node or three are configured the same way. The internal topics'
replication follows the number of nodes (at most 3), the group coordinator starts rebalances at once
(`group.initial.rebalance.delay.ms=0`, as tests and the demo want), and the internal topics get few
partitions so that a broker on two shared cores creates them quickly.

With `sasl_users`, every node also listens for SASL/PLAIN clients (users and passwords given here) on a
port of its own, and with `tls` (a certificate for 127.0.0.1) for TLS clients on another: the operator's
credential handling is tested against them. With `oauthbearer`, that SASL listener also takes OAUTHBEARER
logins, checked by Kafka's default unsecured validator (`OAuthBearerUnsecuredValidatorCallbackHandler`): any
unsigned JWT (`alg: none`) with a `sub` and an `exp` still ahead passes, so a test's own token endpoint
stands in for an identity provider.

With `advertise` (an address of this host that forwards to loopback: a real node's pods reach the brokers at
their bridge's gateway, `real_node.RealNode(forward_ports=...)`), every node also listens for PLAINTEXT
clients on a port of its own (`NodePorts.forwarded`), still on 127.0.0.1, and advertises it at that address:
a client bootstrapped there is told to reach every broker there, one on loopback at 127.0.0.1 (Kafka tells
each client the addresses of the listener it came in on). Brokers talk to each other on loopback.

Streams groups (KIP-1071) start at once too, and their heartbeat and session bounds are wide enough for a
group config to shorten both (a test's group reacts in well under Kafka's 5 s heartbeat default). With
`streams_assignor` (a class name) every node also loads that broker-side streams assignor (KIP-1357) after
Kafka's own `sticky`, which stays the default.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from .certs import ServerCertificate

LOOPBACK = "127.0.0.1"
FORWARDED = "FORWARDED"
"""The listener bound on loopback but advertised at the address that forwards to it."""


@dataclass(frozen=True)
class NodePorts:
    """The ports one node listens on (all on 127.0.0.1)."""

    client: int
    controller: int
    sasl: int | None = None
    tls: int | None = None
    forwarded: int | None = None
    """The listener advertised at another address (`server_properties(advertise=...)`)."""


@dataclass(frozen=True)
class NodeConfig:
    """One node of the cluster: its id (1-based), rack, data folder and ports."""

    node_id: int
    rack: str | None
    data_dir: Path
    ports: NodePorts


def server_properties(
    node: NodeConfig,
    voters: Sequence[NodeConfig],
    sasl_users: Mapping[str, str] | None = None,
    tls: ServerCertificate | None = None,
    streams_assignor: str | None = None,
    advertise: str | None = None,
    oauthbearer: bool = False,
) -> dict[str, str]:
    """The properties of `node` in a cluster whose controller quorum is `voters` (every node)."""
    replication = str(min(3, len(voters)))
    min_isr = str(max(1, min(2, len(voters) - 1)))
    # Client listeners (name = security protocol) and their ports; the controller's is not advertised.
    client_listeners = {"PLAINTEXT": node.ports.client}
    properties = {
        "process.roles": "broker,controller",
        "node.id": str(node.node_id),
        "controller.quorum.voters": ",".join(
            f"{voter.node_id}@{LOOPBACK}:{voter.ports.controller}" for voter in voters
        ),
        "controller.listener.names": "CONTROLLER",
        "inter.broker.listener.name": "PLAINTEXT",
        "log.dirs": str(node.data_dir),
        "num.partitions": "1",
        "default.replication.factor": replication,
        "min.insync.replicas": "1",
        "offsets.topic.replication.factor": replication,
        "offsets.topic.num.partitions": "10",
        "transaction.state.log.replication.factor": replication,
        "transaction.state.log.min.isr": min_isr,
        "transaction.state.log.num.partitions": "4",
        "share.coordinator.state.topic.replication.factor": replication,
        "share.coordinator.state.topic.min.isr": min_isr,
        "group.initial.rebalance.delay.ms": "0",
        "group.streams.initial.rebalance.delay.ms": "0",
        "group.streams.min.heartbeat.interval.ms": "100",
        "group.streams.min.session.timeout.ms": "3000",
        "group.streams.min.task.offset.interval.ms": "1000",
        "num.network.threads": "2",
        "num.io.threads": "2",
        "num.recovery.threads.per.data.dir": "1",
        "log.flush.interval.messages": "9223372036854775807",
    }
    if node.rack is not None:
        properties["broker.rack"] = node.rack
    if streams_assignor is not None:
        properties["group.streams.assignors"] = f"sticky,{streams_assignor}"
    mechanisms = []
    if sasl_users is not None:
        mechanisms.append("PLAIN")
        properties["listener.name.sasl_plaintext.plain.sasl.jaas.config"] = _plain_jaas(sasl_users)
    if oauthbearer:
        mechanisms.append("OAUTHBEARER")
        properties["listener.name.sasl_plaintext.oauthbearer.sasl.jaas.config"] = (
            "org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule required;"
        )
    if mechanisms:
        client_listeners["SASL_PLAINTEXT"] = _port(node, node.ports.sasl, "SASL logins")
        properties["sasl.enabled.mechanisms"] = ",".join(mechanisms)
    if tls is not None:
        client_listeners["SSL"] = _port(node, node.ports.tls, "a certificate")
        properties["listener.name.ssl.ssl.keystore.type"] = "PEM"
        properties["listener.name.ssl.ssl.keystore.certificate.chain"] = tls.chain_pem
        properties["listener.name.ssl.ssl.keystore.key"] = tls.key_pem
    bound = [f"{name}://{LOOPBACK}:{port}" for name, port in client_listeners.items()]
    advertised = list(bound)
    protocols = [f"{name}:{name}" for name in client_listeners]
    if advertise is not None:
        port = _port(node, node.ports.forwarded, "an advertised address")
        bound.append(f"{FORWARDED}://{LOOPBACK}:{port}")
        advertised.append(f"{FORWARDED}://{advertise}:{port}")
        protocols.append(f"{FORWARDED}:PLAINTEXT")
    properties["listeners"] = ",".join([*bound, f"CONTROLLER://{LOOPBACK}:{node.ports.controller}"])
    properties["advertised.listeners"] = ",".join(advertised)
    properties["listener.security.protocol.map"] = ",".join([*protocols, "CONTROLLER:PLAINTEXT"])
    return properties


def _port(node: NodeConfig, port: int | None, what: str) -> int:
    if port is None:
        raise ValueError(f"node {node.node_id} has {what} but no port for them")
    return port


def render(properties: Mapping[str, str]) -> str:
    """A Java properties file (values escaped as `java.util.Properties` reads them)."""
    return "".join(f"{key}={_escape(value)}\n" for key, value in properties.items())


def _plain_jaas(users: Mapping[str, str]) -> str:
    for user, password in users.items():
        if not user.isidentifier() or '"' in password or "\\" in password:
            raise ValueError(f"SASL user {user!r}: use an identifier and a password without quotes")
    entries = " ".join(f'user_{user}="{password}"' for user, password in users.items())
    return f"org.apache.kafka.common.security.plain.PlainLoginModule required {entries};"


def _escape(value: str) -> str:
    return value.replace("\\", "\\\\").replace("\n", "\\n")
