"""A process started again when it exits on its own, as a container under `restartPolicy: Always`.

The sandbox runs the operator as the chart's Deployment runs it, and in a cluster a Deployment's operator
that exits (kopf ends the process when the API server fails its discovery at startup) is started again by
the kubelet after its crash-loop back-off: 10 s, doubled at each exit up to 5 minutes, back to 10 s once the
process ran for 10 minutes. Without it a sandbox whose operator met a failing API server at a restart (chaos
injects such faults) ran on with no operator at all, which no cluster does.
"""

from __future__ import annotations

import logging
import subprocess
import threading
import time
from collections.abc import Callable

log = logging.getLogger(__name__)

BACKOFF_SECONDS = 10.0
MAX_BACKOFF_SECONDS = 300.0
RESET_AFTER_SECONDS = 600.0
"""The kubelet's crash-loop back-off: its first delay, its cap, and how long a run resets it."""


class Supervised:
    """`Supervised(launch)`: `start()` runs `launch()`, and runs it again after the back-off each time its
    process exits without `stop()`; `stop()` ends it for good (until the next `start()`)."""

    def __init__(self, launch: Callable[[], subprocess.Popen[bytes]], name: str) -> None:
        self._launch = launch
        self._name = name
        self._lock = threading.Lock()
        self._process: subprocess.Popen[bytes] | None = None
        self._stopped = threading.Event()
        self.restarts = 0
        """How often the process exited on its own and was started again."""

    @property
    def process(self) -> subprocess.Popen[bytes] | None:
        """The running process (None while stopped or waiting out a back-off)."""
        return self._process

    def start(self) -> None:
        with self._lock:
            if self._process is not None and self._process.poll() is None:
                return
            self._stopped.set()  # a watcher waiting out a back-off starts nothing: this start replaces it
            self._stopped = stopped = threading.Event()
            process = self._process = self._launch()
        threading.Thread(
            target=self._watch, args=(process, stopped), name=f"supervise-{self._name}", daemon=True
        ).start()

    def stop(self) -> subprocess.Popen[bytes] | None:
        """No more restarts; the process, still running, for the caller to end (None: none runs)."""
        with self._lock:
            self._stopped.set()
            process, self._process = self._process, None
        return process

    def _watch(self, process: subprocess.Popen[bytes], stopped: threading.Event) -> None:
        backoff = BACKOFF_SECONDS
        while True:
            started = time.monotonic()
            code = process.wait()
            if stopped.is_set():
                return
            if time.monotonic() - started >= RESET_AFTER_SECONDS:
                backoff = BACKOFF_SECONDS
            log.warning("%s exited with %s: started again in %.0f s", self._name, code, backoff)
            with self._lock:
                self._process = None
            if stopped.wait(backoff):
                return
            with self._lock:
                if stopped.is_set():
                    return
                process = self._process = self._launch()
                self.restarts += 1
            backoff = min(backoff * 2, MAX_BACKOFF_SECONDS)
