"""Fixtures of the install suite: the chart rendered once per CI value set (`charts/smoothscale/ci/`).

Test modules here have names no other suite uses (`test_install_*`): the folder is not a package.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from install_testkit import VALUE_SETS, Json, render


@pytest.fixture(scope="session")
def rendered() -> dict[str, list[Json]]:
    """Value-set name (e.g. `default`, `namespaced`) -> the rendered documents, CRDs included."""
    return {_name(path): render(path) for path in VALUE_SETS}


def _name(path: Path) -> str:
    return path.name.removesuffix("-values.yaml")
