"""End-to-end: the real operator, a real worker process per pod, the emulated API server (`Sandbox`)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from smoothscale.sandbox.addresses import random_block
from smoothscale.sandbox.demo import worker_env
from smoothscale.sandbox.harness import Sandbox


@pytest.fixture()
def sandbox(tmp_path: Path) -> Iterator[Sandbox]:
    with Sandbox(tmp_path, worker_env=worker_env(speed=2.0), first_address=random_block()) as running:
        yield running
