"""The repository layout must never shadow the standard library (`operator/` is one of its folders)."""

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_stdlib_operator_wins_from_repository_root() -> None:
    code = "import operator, sys; print(operator.__file__); print(operator.itemgetter(1)([5, 7]))"
    out = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True
    ).stdout.split()
    assert not out[0].startswith(str(ROOT)), f"operator imported from the repository: {out[0]}"
    assert out[1] == "7"


def test_operator_folder_has_no_init() -> None:
    assert not (ROOT / "operator" / "__init__.py").exists()
