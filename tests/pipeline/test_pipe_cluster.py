"""`analyze` and `sweep` on a Spark standalone cluster: a master and a worker started from pyspark's own
`bin/spark-class` on the loopback address, the jobs run as a user runs them (`python -m smoothscale.pipeline
... --master spark://...`, their own driver), and their tables compared with a local run of the same inputs.
The worker offers 3 cores (more than the 2 a local session here has): the shuffles are sized from them."""

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

from smoothscale.pipeline.analyze import AnalyzeInputs, analyze
from smoothscale.pipeline.sweep import load_grid, sweep

pytestmark = pytest.mark.slow

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
SPARK_CLASS = Path(pyspark.__file__).parent / "bin" / "spark-class"
WORKER_CORES = 3
LOGS = [
    HERE / "kafka_formats" / name
    for name in (
        "consumer-3.6-commit-failed-threads.log",
        "broker-4.1-mass-session-expiry.log",
        "connect-2.6-worker-rebalance-storm.log",
    )
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
    while time.monotonic() < deadline:
        if text in path.read_text(errors="replace"):
            return
        assert process.poll() is None, path.read_text(errors="replace")[-3000:]
        time.sleep(0.3)
    raise AssertionError(f"{text!r} not in {path} after {timeout} s")


def spark_env(tmp: Path) -> dict[str, str]:
    return {
        **os.environ,
        "SPARK_HOME": str(SPARK_CLASS.parents[1]),
        "SPARK_LOCAL_IP": "127.0.0.1",
        "SPARK_DAEMON_MEMORY": "256m",
        "SPARK_LOG_DIR": str(tmp),
        "PYSPARK_PYTHON": sys.executable,
        "PYSPARK_SUBMIT_ARGS": "--conf spark.executor.memory=512m pyspark-shell",
    }


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A master and one worker (WORKER_CORES cores, 1 GB) on 127.0.0.1; yields the master's URL."""
    tmp = tmp_path_factory.mktemp("spark-cluster")
    env = spark_env(tmp)
    port = free_port()
    url = f"spark://127.0.0.1:{port}"
    started: list[subprocess.Popen[bytes]] = []
    try:
        master_log = tmp / "master.log"
        with master_log.open("wb") as out:
            master = subprocess.Popen(
                [str(SPARK_CLASS), "org.apache.spark.deploy.master.Master", "--host", "127.0.0.1",
                 "--port", str(port), "--webui-port", str(free_port())],
                env=env, stdout=out, stderr=subprocess.STDOUT,
            )  # fmt: skip
        started.append(master)
        wait_for(master_log, "I have been elected leader", master, 120)
        worker_log = tmp / "worker.log"
        with worker_log.open("wb") as out:
            worker = subprocess.Popen(
                [str(SPARK_CLASS), "org.apache.spark.deploy.worker.Worker", url, "--host", "127.0.0.1",
                 "--cores", str(WORKER_CORES), "--memory", "1g", "--webui-port", str(free_port()),
                 "--work-dir", str(tmp / "work")],
                env=env, stdout=out, stderr=subprocess.STDOUT,
            )  # fmt: skip
        started.append(worker)
        wait_for(worker_log, "Successfully registered with master", worker, 120)
        yield url
    finally:
        for process in reversed(started):
            process.terminate()
            try:
                process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()


def run_job(url: str, tmp: Path, *args: str) -> str:
    """One job as its own driver on the cluster; its stderr (the session's sizing line)."""
    done = subprocess.run(
        [sys.executable, "-m", "smoothscale.pipeline", *args, "--master", url],
        env=spark_env(tmp), capture_output=True, text=True, timeout=1800, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    assert "wrote" in done.stdout
    return done.stderr


def rows(spark: Any, path: Path, *drop: str) -> list[tuple[Any, ...]]:
    frame = spark.read.parquet(str(path)).drop(*drop)
    return sorted((tuple(str(v) for v in row) for row in frame.collect()), key=repr)


def test_analyze_on_the_cluster_gives_the_local_tables(spark: Any, cluster: str, tmp_path: Path) -> None:
    args = ["analyze", *[a for log in LOGS for a in ("--logs", str(log))], "--out", str(tmp_path / "cluster")]
    stderr = run_job(cluster, tmp_path, *args)
    assert f"{WORKER_CORES} cores: {WORKER_CORES} shuffle partitions" in stderr
    analyze(spark, AnalyzeInputs(journals=[], logs=[str(p) for p in LOGS], out=tmp_path / "local"))
    for table in ("diagnoses", "generations", "rebalances", "log_incidents"):
        on_cluster = rows(spark, tmp_path / "cluster" / "tables" / table)
        assert on_cluster == rows(spark, tmp_path / "local" / "tables" / table), table
    kinds = {r[1] for r in rows(spark, tmp_path / "cluster" / "tables" / "diagnoses")}
    assert kinds == {"commit-failed", "heartbeat-expiration", "sync-storm"}


def test_sweep_on_the_cluster_gives_the_local_table(spark: Any, cluster: str, tmp_path: Path) -> None:
    grid = tmp_path / "grid.yaml"
    grid.write_text(yaml.safe_dump(GRID))
    run_job(cluster, tmp_path, "sweep", str(grid), "--out", str(tmp_path / "cluster"))
    sweep(spark, load_grid(grid), tmp_path / "local")
    # the wall-clock time a simulation took differs from run to run
    local = spark.read.parquet(str(tmp_path / "local" / "tables" / "sweep"))
    timing = [c for c in local.columns if "wall" in c]
    on_cluster = rows(spark, tmp_path / "cluster" / "tables" / "sweep", *timing)
    assert len(on_cluster) == 4
    assert on_cluster == rows(spark, tmp_path / "local" / "tables" / "sweep", *timing)
