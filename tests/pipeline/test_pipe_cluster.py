"""`analyze` and `sweep` on a Spark standalone cluster: a master and a worker started from pyspark's own
`bin/spark-class` on the loopback address, the jobs run as a user runs them (`smoothscale analyze ...
--master spark://...`, `smoothscale sweep ...`, each its own driver), and their tables compared with a
local run of the same inputs. Each job gets 3 cores of the worker (more than the 2 a local session here
has): its shuffles are sized from them.

The two drivers run side by side (the worker offers 6 cores, each job takes 3) while this process builds
the local tables; every JVM of the test compiles with C1 only: short runs of large generated code spend
most of their CPU in C2 otherwise, and this test measures results, not speed."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pyspark
import pytest
import yaml
from pipe_testkit import QUICK_JIT

from smoothscale.pipeline.analyze import AnalyzeInputs, analyze
from smoothscale.pipeline.sweep import load_grid, sweep

pytestmark = pytest.mark.slow

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
SPARK_CLASS = Path(pyspark.__file__).parent / "bin" / "spark-class"
JOB_CORES = 3
LOGS = [
    HERE / "kafka_formats" / name
    for name in ("consumer-3.6-commit-failed-threads.log", "broker-4.1-mass-session-expiry.log")
]
GRID = {
    "scenarios": [str(REPO / "examples" / "scenarios" / "kip441-scale-out.yaml")],
    "strategies": ["kip441", "smoothscale"],
    "seeds": [0],
    "parameters": {"planner.maxWarmupReplicas": [1, 2]},
}


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def wait_for(path: Path, text: str, process: subprocess.Popen[bytes], timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while text not in path.read_text(errors="replace"):
        assert process.poll() is None, path.read_text(errors="replace")[-3000:]
        assert time.monotonic() < deadline, f"{text!r} not in {path} after {timeout} s"
        time.sleep(0.3)


def spark_env(tmp: Path) -> dict[str, str]:
    submit = [
        f"--driver-java-options {QUICK_JIT}",
        f"--conf spark.executor.extraJavaOptions={QUICK_JIT}",
        "--conf spark.executor.memory=512m",
        f"--conf spark.cores.max={JOB_CORES}",
    ]
    return {
        **os.environ,
        "SPARK_HOME": str(SPARK_CLASS.parents[1]),
        "SPARK_LOCAL_IP": "127.0.0.1",
        "SPARK_DAEMON_MEMORY": "256m",
        "SPARK_DAEMON_JAVA_OPTS": QUICK_JIT,
        "SPARK_MASTER_OPTS": "-Dspark.master.rest.enabled=false",
        "SPARK_LOG_DIR": str(tmp),
        "PYSPARK_PYTHON": sys.executable,
        "PYSPARK_SUBMIT_ARGS": " ".join([*submit, "pyspark-shell"]),
    }


def start(command: list[str], log: Path, env: dict[str, str]) -> subprocess.Popen[bytes]:
    with log.open("wb") as out:
        return subprocess.Popen(command, env=env, stdout=out, stderr=subprocess.STDOUT)


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, dict[str, str]]]:
    """A master and one worker (two jobs' cores, 1 GB) on 127.0.0.1; yields the master's URL and the
    environment of its clients. Both stop when the module ends, whatever happened."""
    tmp = tmp_path_factory.mktemp("spark-cluster")
    env = spark_env(tmp)
    url = f"spark://127.0.0.1:{free_port()}"
    started: list[subprocess.Popen[bytes]] = []
    try:
        master = start(
            [str(SPARK_CLASS), "org.apache.spark.deploy.master.Master", "--host", "127.0.0.1",
             "--port", url.rsplit(":", 1)[1], "--webui-port", str(free_port())],
            tmp / "master.log", env,
        )  # fmt: skip
        started.append(master)
        wait_for(tmp / "master.log", "I have been elected leader", master, 300)
        worker = start(
            [str(SPARK_CLASS), "org.apache.spark.deploy.worker.Worker", url, "--host", "127.0.0.1",
             "--cores", str(2 * JOB_CORES), "--memory", "1g", "--webui-port", str(free_port()),
             "--work-dir", str(tmp / "work")],
            tmp / "worker.log", env,
        )  # fmt: skip
        started.append(worker)
        wait_for(tmp / "worker.log", "Successfully registered with master", worker, 300)
        yield url, env
    finally:
        for process in reversed(started):
            process.terminate()
            try:
                process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()


def rows(spark: Any, path: Path, *drop: str) -> list[tuple[str, ...]]:
    frame = spark.read.parquet(str(path)).drop(*drop)
    return sorted(tuple(str(v) for v in row) for row in frame.collect())


def test_analyze_and_sweep_on_the_cluster_give_the_local_tables(
    spark: Any, cluster: tuple[str, dict[str, str]], tmp_path: Path
) -> None:
    url, env = cluster
    grid = tmp_path / "grid.yaml"
    grid.write_text(yaml.safe_dump(GRID))
    commands = {
        "analyze": ["analyze", *[a for log in LOGS for a in ("--logs", str(log))]],
        "sweep": ["sweep", str(grid)],
    }
    jobs = {
        name: subprocess.Popen(
            [sys.executable, "-m", "smoothscale.cli", *args, "--out", str(tmp_path / name), "--master", url],
            env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        )
        for name, args in commands.items()
    }  # fmt: skip
    try:
        analyze(spark, AnalyzeInputs(journals=[], logs=[str(p) for p in LOGS], out=tmp_path / "local"))
        sweep(spark, load_grid(grid), tmp_path / "local")
        outputs = {name: job.communicate(timeout=600) for name, job in jobs.items()}
    finally:
        for job in jobs.values():
            if job.poll() is None:
                job.kill()
                job.communicate()
    for name, job in jobs.items():
        stdout, stderr = outputs[name]
        assert job.returncode == 0 and "wrote" in stdout, stderr[-3000:]
        assert f"{JOB_CORES} cores: {JOB_CORES} shuffle partitions" in stderr, stderr[-3000:]
    for table in ("diagnoses", "generations", "rebalances", "log_incidents"):
        on_cluster = rows(spark, tmp_path / "analyze" / "tables" / table)
        assert on_cluster == rows(spark, tmp_path / "local" / "tables" / table), table
    kinds = {row[1] for row in rows(spark, tmp_path / "analyze" / "tables" / "diagnoses")}
    assert kinds == {"commit-failed", "heartbeat-expiration"}, kinds
    # The time each simulation took differs from run to run.
    local_sweep = tmp_path / "local" / "tables" / "sweep"
    timing = [c for c in spark.read.parquet(str(local_sweep)).columns if "wall" in c]
    on_cluster = rows(spark, tmp_path / "sweep" / "tables" / "sweep", *timing)
    assert len(on_cluster) == 4
    assert on_cluster == rows(spark, local_sweep, *timing)
