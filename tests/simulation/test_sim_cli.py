"""`smoothscale simulate` end to end: a comparison table, one PNG per strategy, clear errors."""

from __future__ import annotations

from pathlib import Path

from click.testing import CliRunner
from sim_testkit import LIBRARY

from smoothscale.cli.main import cli

SMALL = LIBRARY / "kip441-scale-out.yaml"
PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


def test_all_strategies_print_a_table_and_write_a_timeline_each(tmp_path: Path) -> None:
    result = CliRunner().invoke(cli, ["simulate", str(SMALL), "--seed", "3", "--out", str(tmp_path / "out")])
    assert result.exit_code == 0, result.output
    header = result.output.splitlines()[0]
    assert header.startswith("kip441-scale-out (seed 3)")
    assert header.split()[-3:] == ["eager", "kip441", "smoothscale"]
    assert "time to balance (s)" in result.output and "ratio to lower bound" in result.output
    for strategy in ("eager", "kip441", "smoothscale"):
        png = tmp_path / "out" / f"kip441-scale-out-{strategy}.png"
        assert png.read_bytes().startswith(PNG_MAGIC)


def test_one_strategy_writes_one_timeline(tmp_path: Path) -> None:
    result = CliRunner().invoke(
        cli, ["simulate", str(SMALL), "--strategy", "smoothscale", "--out", str(tmp_path)]
    )
    assert result.exit_code == 0, result.output
    assert [p.name for p in tmp_path.iterdir()] == ["kip441-scale-out-smoothscale.png"]


def test_a_malformed_scenario_exits_2_naming_the_field(tmp_path: Path) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text(SMALL.read_text().replace("pods: {count: 2}", "pods: {count: 2, persistentVolumes: true}"))
    result = CliRunner().invoke(cli, ["simulate", str(bad), "--out", str(tmp_path)])
    assert result.exit_code == 2
    assert "pods.persistentVolumes: Extra inputs are not permitted" in result.output
    assert not list(tmp_path.glob("*.png"))


def test_broken_yaml_and_missing_files_are_bad_input(tmp_path: Path) -> None:
    broken = tmp_path / "broken.yaml"
    broken.write_text("name: [unclosed\n")
    result = CliRunner().invoke(cli, ["simulate", str(broken)])
    assert result.exit_code == 2 and "not valid YAML at line" in result.output
    result = CliRunner().invoke(cli, ["simulate", str(tmp_path / "missing.yaml")])
    assert result.exit_code == 2 and "cannot read" in result.output
