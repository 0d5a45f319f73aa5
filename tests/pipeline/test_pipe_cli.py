"""The commands end to end: `smoothscale analyze` writes Parquet and report.html citing the lines,
`smoothscale sweep` runs a tiny grid as one Spark job, and the same job runs as a plain program
(`python -m smoothscale.pipeline`, what `spark-submit` runs) in its own JVM."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml
from click.testing import CliRunner
from pipe_testkit import QUICK_JIT, Incidents

from smoothscale.cli.main import cli

REPO = Path(__file__).resolve().parents[2]
PIPELINE_MAIN = REPO / "src" / "smoothscale" / "pipeline" / "__main__.py"
SCENARIO = REPO / "examples" / "scenarios" / "kip441-scale-out.yaml"
TABLES = {
    "rebalances",
    "diagnoses",
    "warmups",
    "restore_by_pod",
    "restore_by_zone",
    "time_to_balance",
    "cross_zone",
}


def analyze_args(incidents: Incidents, out: Path) -> list[str]:
    args = ["--journal", str(incidents.journal), "--out", str(out)]
    for log in incidents.logs:
        args += ["--logs", str(log)]
    return args


def parquet(spark: Any, path: Path) -> list[dict[str, Any]]:
    return [row.asDict() for row in spark.read.parquet(str(path)).collect()]


def check_analysis(spark: Any, out: Path, incidents: Incidents) -> None:
    assert {p.name for p in (out / "tables").iterdir()} >= TABLES
    diagnoses = parquet(spark, out / "tables" / "diagnoses")
    assert {"closely-grouped", "regular-probing", "poll-timeout"} <= {d["kind"] for d in diagnoses}
    page = (out / "report.html").read_text()
    assert incidents.cites["sync_failed"] in page and incidents.cites["churn_gone"] in page
    assert "malformed" in page
    for png in ("timeline.png", "restore_rates.png", "time_to_balance.png"):
        assert (out / png).read_bytes()[:4] == b"\x89PNG"


@pytest.mark.slow
def test_analyze_command_writes_parquet_and_report(spark: Any, incidents: Incidents, tmp_path: Path) -> None:
    result = CliRunner().invoke(cli, ["analyze", *analyze_args(incidents, tmp_path / "out")])
    assert result.exit_code == 0, result.output
    check_analysis(spark, tmp_path / "out", incidents)


def test_analyze_command_needs_an_input(tmp_path: Path) -> None:
    result = CliRunner().invoke(cli, ["analyze", "--out", str(tmp_path)])
    assert result.exit_code == 2


@pytest.mark.slow
def test_sweep_command_runs_a_tiny_grid(spark: Any, tmp_path: Path) -> None:
    grid = tmp_path / "grid.yaml"
    grid.write_text(
        yaml.safe_dump(
            {
                "scenarios": [os.path.relpath(SCENARIO, tmp_path)],
                "strategies": ["kip441", "smoothscale"],
                "seeds": [0],
                "parameters": {"planner.maxWarmupReplicas": [1, 2]},
            }
        )
    )
    result = CliRunner().invoke(cli, ["sweep", str(grid), "--out", str(tmp_path / "out")])
    assert result.exit_code == 0, result.output
    rows = parquet(spark, tmp_path / "out" / "tables" / "sweep")
    assert sorted((r["strategy"], r["planner_maxWarmupReplicas"]) for r in rows) == [
        ("kip441", 1), ("kip441", 2), ("smoothscale", 1), ("smoothscale", 2),
    ]  # fmt: skip
    assert all(r["error"] is None and r["time_to_balance_s"] > 0 for r in rows)
    assert (
        "time to balance against planner.maxWarmupReplicas" in (tmp_path / "out" / "sweep.html").read_text()
    )


def test_sweep_rejects_an_unknown_strategy(tmp_path: Path) -> None:
    grid = tmp_path / "grid.yaml"
    grid.write_text(yaml.safe_dump({"scenarios": [str(SCENARIO)], "strategies": ["magic"]}))
    result = CliRunner().invoke(cli, ["sweep", str(grid), "--out", str(tmp_path / "out")])
    assert result.exit_code == 2
    assert "magic" in result.output


@pytest.mark.slow
def test_the_job_runs_as_a_program_like_under_spark_submit(
    spark: Any, incidents: Incidents, tmp_path: Path
) -> None:
    """`spark-submit pipeline/__main__.py` when the pyspark install ships it, else `python -m`."""
    submit = shutil.which("spark-submit", path=str(Path(sys.executable).parent))
    quick = ["--driver-java-options", QUICK_JIT]
    entry = [submit, "--master", "local[1]", *quick, str(PIPELINE_MAIN)] if submit else [
        sys.executable, "-m", "smoothscale.pipeline",
    ]  # fmt: skip
    env = {
        **os.environ,
        "PYSPARK_PYTHON": sys.executable,
        "SPARK_LOCAL_IP": "127.0.0.1",
        "PYSPARK_SUBMIT_ARGS": " ".join([*quick, "pyspark-shell"]),  # what `python -m` starts its JVM with
    }
    done = subprocess.run(
        [*entry, "analyze", *analyze_args(incidents, tmp_path / "out")],
        env=env, capture_output=True, text=True, timeout=300, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    assert "wrote" in done.stdout
    check_analysis(spark, tmp_path / "out", incidents)
