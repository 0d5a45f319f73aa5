"""`smoothscale demo --real-node` refuses what it cannot run with a clear error (exit 2) before starting
anything: a missing control plane, image archive, helm or chart, and the options of the other demos."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from smoothscale.cli.main import cli


@pytest.mark.parametrize(
    ("extra", "expected"),
    [
        ([], "--real-node needs --kube-bin"),
        (["--kube-bin", "{dir}"], "--real-node needs --node-images"),
        (["--kube-bin", "{dir}", "--node-images", "{file}", "--chart", "{dir}"], "no {dir}/Chart.yaml"),
        (["--kafka"], "without --kafka and --keep"),
    ],
)
def test_missing_pieces_are_named(tmp_path: Path, extra: list[str], expected: str) -> None:
    archive = tmp_path / "images.tar"
    archive.write_bytes(b"")
    names = {"dir": str(tmp_path), "file": str(archive)}
    args = ["demo", "--output-dir", str(tmp_path / "out"), "--real-node", str(tmp_path)]
    result = CliRunner().invoke(cli, [*args, *(part.format(**names) for part in extra)])
    assert result.exit_code == 2, result.output
    assert expected.format(**names) in result.output, result.output
