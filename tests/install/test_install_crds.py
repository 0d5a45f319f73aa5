"""The chart ships the generated StreamsApp CRD unchanged, and one command refreshes both copies."""

from __future__ import annotations

from pathlib import Path

from click.testing import CliRunner
from install_testkit import CHART, ROOT

from smoothscale.cli.main import cli
from smoothscale.resource.crd import REGENERATE_COMMAND, crd_yaml


def test_chart_ships_the_generated_crd() -> None:
    # crds/streamsapp.yaml itself is checked against the models by tests/resource/test_crd_generation.py.
    chart_copy = CHART / "crds" / "streamsapp.yaml"
    assert chart_copy.read_bytes() == (ROOT / "crds" / "streamsapp.yaml").read_bytes(), (
        f"the chart's copy of the CRD differs from crds/streamsapp.yaml: run `{REGENERATE_COMMAND}`"
    )


def test_the_regenerate_command_writes_both_copies(tmp_path: Path) -> None:
    args = REGENERATE_COMMAND.split()[1:]
    outputs = [arg for arg, flag in zip(args[1:], args, strict=False) if flag == "--output"]
    assert outputs == ["crds/streamsapp.yaml", "charts/smoothscale/crds/streamsapp.yaml"]
    paths = [str(tmp_path / output) for output in outputs]
    result = CliRunner().invoke(cli, ["crd", *(arg for path in paths for arg in ("--output", path))])
    assert result.exit_code == 0, result.output
    assert all(Path(path).read_text(encoding="utf-8") == crd_yaml() for path in paths)
