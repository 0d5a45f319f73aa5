"""The sandbox's operator runs as a Deployment's container does: started again, after the kubelet's
crash-loop back-off, when it exits on its own; never twice at once; not after `stop()`."""

from __future__ import annotations

import subprocess
import sys
import time
from collections.abc import Callable, Iterator

import pytest
from sandbox_testkit import eventually

from smoothscale.sandbox import supervisor
from smoothscale.sandbox.supervisor import Supervised

Launch = Callable[[], "subprocess.Popen[bytes]"]


@pytest.fixture()
def launched() -> Iterator[list[subprocess.Popen[bytes]]]:
    """Every process the test's launcher started; killed at the end."""
    processes: list[subprocess.Popen[bytes]] = []
    yield processes
    for process in processes:
        process.kill()
        process.wait()


def _launcher(launched: list[subprocess.Popen[bytes]], *lives: float) -> Launch:
    """A launcher whose n-th process lives `lives[n]` seconds (the last one's, after those)."""

    def launch() -> subprocess.Popen[bytes]:
        seconds = lives[min(len(launched), len(lives) - 1)]
        launched.append(subprocess.Popen([sys.executable, "-c", f"import time; time.sleep({seconds})"]))
        return launched[-1]

    return launch


def test_a_process_that_exits_is_started_again_until_stopped(
    launched: list[subprocess.Popen[bytes]], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(supervisor, "BACKOFF_SECONDS", 0.1)
    supervised = Supervised(_launcher(launched, 0.0), "probe")
    supervised.start()
    eventually(lambda: supervised.restarts >= 2, timeout=20)
    supervised.stop()
    stopped_at = len(launched)
    time.sleep(1.0)
    assert len(launched) == stopped_at


def test_a_start_during_the_back_off_replaces_the_pending_restart(
    launched: list[subprocess.Popen[bytes]], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(supervisor, "BACKOFF_SECONDS", 1.0)
    supervised = Supervised(_launcher(launched, 0.0, 60.0), "probe")
    supervised.start()
    eventually(lambda: launched[0].poll() is not None and supervised.process is None, timeout=20)
    supervised.start()  # during the first one's back-off
    time.sleep(2.0)  # the back-off has ended: the replaced restart started nothing
    assert len(launched) == 2 and supervised.restarts == 0
    assert supervised.process is launched[1] and launched[1].poll() is None
    supervised.stop()
