"""The sandbox's Kafka launcher: real brokers that serve clients, carry racks, log where asked, and leave
no process behind (stopped, failed, or when the process that started them dies)."""

from __future__ import annotations

import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest
from kafka_testkit import admin, alive, consume_all, wait_gone

from smoothscale.sandbox.kafka.broker import KafkaCluster, KafkaStartError
from smoothscale.sandbox.kafka.topics import create_topic, produce


def test_one_broker_serves_producers_and_consumers(kafka_broker: KafkaCluster) -> None:
    create_topic(kafka_broker.bootstrap_servers, "launcher-roundtrip", partitions=2)
    produce(kafka_broker.bootstrap_servers, "launcher-roundtrip", {0: 5, 1: 7})
    values = consume_all(kafka_broker.bootstrap_servers, "launcher-roundtrip", expected=12)
    assert sorted(values) == sorted([f"record-{i}".encode() for i in [*range(5), *range(7)]])


def test_broker_writes_kafkas_own_logs_in_the_chosen_folder(kafka_broker: KafkaCluster) -> None:
    folder = kafka_broker.node_log_dir(1)
    assert folder.parent == kafka_broker.log_dir
    server_log = (folder / "server.log").read_text()
    assert "[KafkaRaftServer nodeId=1] Kafka Server started (kafka.server.KafkaRaftServer)" in server_log
    first = server_log.splitlines()[0]
    assert first.startswith("[20") and "] INFO " in first  # Kafka's "[%d] %p %m (%c)" layout
    assert "(org.apache.kafka.controller." in (folder / "controller.log").read_text()


def test_three_brokers_carry_one_zone_each(kafka_racks: KafkaCluster) -> None:
    client = admin(kafka_racks.bootstrap_servers)
    described = client.describe_cluster().result(timeout=20)
    assert sorted((node.id, node.rack) for node in described.nodes) == [
        (1, "zone-a"),
        (2, "zone-b"),
        (3, "zone-c"),
    ]


def test_stopping_ends_every_jvm_even_when_the_body_fails(tmp_path: Path) -> None:
    started = time.monotonic()
    # A cluster id may begin with '-' (base64url): StorageTool must not read it as an option.
    cluster = KafkaCluster(tmp_path, cluster_id="-JCIGa13TeC8zKpT_eU6mg")
    with pytest.raises(RuntimeError, match="test body failed"), cluster:
        pids = cluster.pids
        assert len(pids) == 1 and all(alive(pid) for pid in pids)
        assert time.monotonic() - started < 30, "the broker must be ready within 30 s"
        raise RuntimeError("test body failed")
    assert wait_gone(pids, timeout=1) == []
    assert cluster.pids == []


def test_a_broker_that_cannot_start_is_named_and_nothing_keeps_running(tmp_path: Path) -> None:
    cluster = KafkaCluster(tmp_path)
    port = int(cluster.bootstrap_servers.rsplit(":", 1)[1])
    with socket.socket() as squatter:
        squatter.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        squatter.bind(("127.0.0.1", port))
        squatter.listen()
        with pytest.raises(KafkaStartError, match=r"Kafka broker 1 (exited|not ready)") as failure:
            cluster.start(timeout=40)
    assert "server.log" in str(failure.value) or "kafka.out" in str(failure.value)
    assert cluster.pids == []


LAUNCH = """
import sys, time
from pathlib import Path
from smoothscale.sandbox.kafka.broker import KafkaCluster
cluster = KafkaCluster(Path(sys.argv[1])).start()
print(*cluster.pids, flush=True)
time.sleep(600)
"""


def test_brokers_die_with_the_process_that_started_them(tmp_path: Path) -> None:
    """SIGKILL leaves no chance for finally or atexit: the kernel's parent-death signal ends the JVM."""
    launcher = subprocess.Popen(
        [sys.executable, "-c", LAUNCH, str(tmp_path)],
        stdout=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    try:
        assert launcher.stdout is not None
        pids = [int(pid) for pid in launcher.stdout.readline().split()]
        assert pids and all(alive(pid) for pid in pids)
    finally:
        launcher.send_signal(signal.SIGKILL)
        launcher.wait()
    assert wait_gone(pids) == []
