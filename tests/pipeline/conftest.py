"""The pipeline's tests share ONE local Spark session (about 8 s to start) and the incident fixtures.

The helpers live in `pipe_testkit.py` next to the tests (a unique module name: other folders have their own
kits); this folder goes on `sys.path` so that the tests import it under any import mode.
"""

from __future__ import annotations

import logging
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

HERE = str(Path(__file__).resolve().parent)
if HERE not in sys.path:
    sys.path.insert(0, HERE)

from pipe_testkit import Incidents, write_incidents  # noqa: E402


@pytest.fixture(scope="session")
def spark() -> Iterator[object]:
    from smoothscale.pipeline.session import build_session  # noqa: PLC0415 - only when a test needs Spark

    session = build_session("local[2]", app_name="smoothscale-tests")
    yield session
    session.stop()
    # py4j logs every connection it closes at INFO, the last ones from finalizers at interpreter exit, when
    # the run's streams are closed: nothing to read there.
    logging.getLogger("py4j").setLevel(logging.WARNING)


@pytest.fixture(scope="session")
def incidents(tmp_path_factory: pytest.TempPathFactory) -> Incidents:
    return write_incidents(tmp_path_factory.mktemp("incidents"))
