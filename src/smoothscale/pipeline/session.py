"""The Spark session every pipeline job runs in.

Locally the session is `local[*]` unless a master is given; under `spark-submit` the master (and everything
else) comes from the submit command, so the job must not override it. The UI and the console progress bar
stay off: the jobs are batch runs whose progress nobody watches, and the UI's port clashes when several
runs share a machine.

The shuffles are sized from the cores the session got (one partition per core, at least two): the tables
after the parsing are small, so more partitions than cores only add tasks, and fewer leave cores idle. On a
cluster the executors register after the session starts: the session waits for the first of them (up to
`EXECUTOR_WAIT_S`) before it counts the cores.
"""

from __future__ import annotations

import os
import sys
import time

from pyspark.sql import SparkSession

DEFAULT_MASTER = "local[*]"
MIN_SHUFFLE_PARTITIONS = 2
EXECUTOR_WAIT_S = 60.0


def under_spark_submit() -> bool:
    """True in a driver started by `spark-submit` (it hands the driver its JVM through this variable)."""
    return "PYSPARK_GATEWAY_PORT" in os.environ


def build_session(master: str | None = None, app_name: str = "smoothscale") -> SparkSession:
    """A session on `master`; `local[*]` when none is given and `spark-submit` did not choose one."""
    builder = (
        SparkSession.builder.appName(app_name)
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        # The tables after parsing are small: a few partitions, not the default 200 (`size_shuffles`).
        .config("spark.sql.shuffle.partitions", str(MIN_SHUFFLE_PARTITIONS))
        # Adaptive execution re-plans each query at every shuffle, as a job of its own: on tables of a few
        # thousand rows (every table after the parsing) that planning costs more than it saves.
        .config("spark.sql.adaptive.enabled", "false")
        .config("spark.sql.session.timeZone", "UTC")
    )
    if master is None and not under_spark_submit():
        master = DEFAULT_MASTER
    if master is not None:
        builder = builder.master(master)
    if master is not None and master.startswith("local"):
        # Local workers run this interpreter (with this package), not whatever `python3` is on the PATH;
        # the driver binds to the loopback address (a cluster's executors would need a reachable one).
        os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
        os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    spark = builder.getOrCreate()
    size_shuffles(spark)
    return spark


def _executors(spark: SparkSession) -> int:
    """The executors registered with the driver (local mode: the driver's own)."""
    return int(spark.sparkContext._jsc.sc().getExecutorMemoryStatus().size())  # the driver counts as one


def size_shuffles(spark: SparkSession, wait_s: float = EXECUTOR_WAIT_S) -> int:
    """Set `spark.sql.shuffle.partitions` to the session's cores (its default parallelism), at least
    MIN_SHUFFLE_PARTITIONS; on a cluster, once an executor has registered. Returns the number set."""
    master = spark.sparkContext.master or ""
    if not master.startswith("local"):
        deadline = time.monotonic() + wait_s
        while _executors(spark) < 2 and time.monotonic() < deadline:
            time.sleep(0.2)
    partitions = max(MIN_SHUFFLE_PARTITIONS, spark.sparkContext.defaultParallelism)
    spark.conf.set("spark.sql.shuffle.partitions", str(partitions))
    cores = spark.sparkContext.defaultParallelism
    print(
        f"smoothscale: Spark master {master}, {cores} cores: {partitions} shuffle partitions", file=sys.stderr
    )
    return partitions
