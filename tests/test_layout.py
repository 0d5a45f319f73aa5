"""The repository's layout: the package under src/, its folders the import names, nothing at the root that
could shadow the standard library (the operator's package is named `operator`)."""

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "src" / "smoothscale"


def test_stdlib_operator_wins_from_repository_root() -> None:
    code = "import operator, sys; print(operator.__file__); print(operator.itemgetter(1)([5, 7]))"
    out = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True
    ).stdout.split()
    assert not out[0].startswith(str(ROOT)), f"operator imported from the repository: {out[0]}"
    assert out[1] == "7"


def test_every_folder_with_modules_is_a_package_named_by_its_path() -> None:
    """A folder's path below src/ is its import name: each one holding modules is a regular package."""
    folders = {path.parent for path in PACKAGE.rglob("*.py")} - {PACKAGE}
    assert sorted(str(f.relative_to(ROOT)) for f in folders if not (f / "__init__.py").is_file()) == []


def test_the_package_is_imported_from_src() -> None:
    import smoothscale.control.step  # noqa: PLC0415

    assert Path(smoothscale.control.step.__file__).resolve().is_relative_to(ROOT / "src")
