"""The Spark session every pipeline job runs in.

Locally the session is `local[*]` unless a master is given; under `spark-submit` the master (and everything
else) comes from the submit command, so the job must not override it. The UI and the console progress bar
stay off: the jobs are batch runs whose progress nobody watches, and the UI's port clashes when several
runs share a machine.
"""

from __future__ import annotations

import os
import sys

from pyspark.sql import SparkSession

DEFAULT_MASTER = "local[*]"


def under_spark_submit() -> bool:
    """True in a driver started by `spark-submit` (it hands the driver its JVM through this variable)."""
    return "PYSPARK_GATEWAY_PORT" in os.environ


def build_session(master: str | None = None, app_name: str = "smoothscale") -> SparkSession:
    """A session on `master`; `local[*]` when none is given and `spark-submit` did not choose one."""
    builder = (
        SparkSession.builder.appName(app_name)
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        # The tables after parsing are small: two partitions, not the default 200.
        .config("spark.sql.shuffle.partitions", "2")
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
    return builder.getOrCreate()
