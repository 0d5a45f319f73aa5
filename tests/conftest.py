"""Fixtures every test folder may use: real Apache Kafka brokers (`smoothscale.sandbox.kafka`).

They start lazily, once per test run, only when a test asks for them: tests without Kafka never pay for a
JVM. Both stop their JVMs when the run ends, also after failures. The brokers' own logs (server.log,
controller.log, state-change.log) go to `<logs>/broker-<id>/`, where `<logs>` is `$SMOOTHSCALE_KAFKA_LOGS`
if set (to keep them, e.g. as log-parser material), else a temporary folder of the run.
"""

from __future__ import annotations

import fcntl
import logging
import os
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from smoothscale.sandbox.kafka.broker import KafkaCluster
from smoothscale.sandbox.kafka_streams import sample_jar

KAFKA_LOGS_ENV = "SMOOTHSCALE_KAFKA_LOGS"
ROOT = Path(__file__).resolve().parents[1]
JAR_USERS = {
    "test_bridge_kafka.py",
    "test_bridge_chaos.py",
    "test_bridge_unlogged_store.py",
    "test_bridge_topology_change.py",
    "test_bridge_zone_loss.py",
    "test_bridge_streams_protocol.py",
    "test_realkube_bridge.py",
    "test_pipe_real_streams.py",
    "test_pipe_real_broker.py",
}
"""Test modules that run the Java sample app (`sample_jar`)."""


def _log_dir(factory: pytest.TempPathFactory, name: str) -> Path:
    chosen = os.environ.get(KAFKA_LOGS_ENV)
    return Path(chosen) / name if chosen else factory.mktemp(f"{name}-logs")


@pytest.fixture(scope="session")
def kafka_broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[KafkaCluster]:
    """One broker (and KRaft controller) on 127.0.0.1, without a rack."""
    with KafkaCluster(tmp_path_factory.mktemp("kafka"), _log_dir(tmp_path_factory, "kafka")) as cluster:
        yield cluster


@pytest.fixture(scope="session")
def kafka_racks(tmp_path_factory: pytest.TempPathFactory) -> Iterator[KafkaCluster]:
    """Three brokers, `broker.rack` zone-a, zone-b and zone-c (node ids 1, 2, 3)."""
    work_dir = tmp_path_factory.mktemp("kafka-racks")
    with KafkaCluster(work_dir, _log_dir(tmp_path_factory, "kafka-racks"), brokers=3) as cluster:
        yield cluster


@pytest.fixture(autouse=True)
def _root_logger_as_it_was() -> Iterator[None]:
    """Put the root logger's handlers and level back after each test. `smoothscale operator` and kopf's CLI
    (run in-process by CliRunner and KopfRunner) configure logging: a root handler on the stderr of the
    moment, a test's stream that is closed later. Left in place, any later log line of the run goes to a
    closed stream: py4j closing Spark's gateway at interpreter exit printed a "Logging error" traceback."""
    root = logging.getLogger()
    handlers, level = list(root.handlers), root.level
    yield
    root.handlers[:] = handlers
    root.setLevel(level)


def pytest_collection_finish(session: pytest.Session) -> None:
    """Build what the selected tests run, once, before the first of them and outside every test's timeout
    (pyproject's): cold, the Go build of the control plane takes longer than one test may. A warm machine
    returns at once. The two processes of an xdist run take turns (a lock file beside the build): the second
    finds everything built."""
    selected = {Path(str(item.path)).resolve() for item in session.items}
    ROOT.joinpath(".cache").mkdir(exist_ok=True)
    with ROOT.joinpath(".cache/test-builds.lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if any(ROOT / "tests/realkube" in path.parents for path in selected):
            subprocess.run(["bash", str(ROOT / "tools/kube/build.sh")], check=True, stdout=subprocess.DEVNULL)
        if any(path.name in JAR_USERS for path in selected):
            sample_jar()
