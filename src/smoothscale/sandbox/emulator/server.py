"""Serve an emulator over real HTTP on 127.0.0.1 and describe it in a kubeconfig.

kmock's `Server` also patches aiohttp's DNS resolution process-wide (and must be exited in LIFO order), and
its test server waits up to 60 s for open watch streams when it stops. Our own small runner uses aiohttp's
low-level server directly: handlers are cancelled when their client disconnects (no leaked watch streams),
and stopping first ends all watch streams, so that a stop takes milliseconds.

Two ways to run it: `serve_emulator()` inside the caller's event loop (async tests, the demo), and
`EmulatorThread` in a thread of its own, for synchronous code such as the `kubernetes` client, kubectl
subprocesses and `kopf.testing.KopfRunner`, which would otherwise block the loop that serves them.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import json
import tempfile
import threading
from collections.abc import AsyncIterator, Callable, Coroutine
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

import aiohttp.web

from .api import ExtendedEmulator
from .registry import build_emulator

T = TypeVar("T")

CONTEXT_NAME = "smoothscale-emulator"


@dataclass(frozen=True)
class RunningEmulator:
    """A served emulator: its URL (`http://127.0.0.1:<port>`) and a kubeconfig file pointing at it."""

    emulator: ExtendedEmulator
    url: str
    port: int
    kubeconfig: Path


def write_kubeconfig(
    path: str | Path, url: str, *, namespace: str = "default", name: str = CONTEXT_NAME
) -> Path:
    """A kubeconfig with one cluster (plain HTTP, no TLS), a user without credentials, a current context;
    written as JSON (YAML to kubectl and the Python client), which the Java bridge reads."""
    path = Path(path)
    config = {
        "apiVersion": "v1",
        "kind": "Config",
        "preferences": {},
        "clusters": [{"name": name, "cluster": {"server": url}}],
        "users": [{"name": name, "user": {}}],
        "contexts": [{"name": name, "context": {"cluster": name, "user": name, "namespace": namespace}}],
        "current-context": name,
    }
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(json.dumps(config, indent=2))  # JSON is YAML too; the Java bridge reads JSON
    tmp.replace(path)  # atomic: a reader polling for the file never sees half of it
    return path


@contextlib.asynccontextmanager
async def serve_emulator(
    emulator: ExtendedEmulator | None = None,
    *,
    host: str = "127.0.0.1",
    port: int = 0,
    kubeconfig: str | Path | None = None,
    shutdown_timeout: float = 1.0,
) -> AsyncIterator[RunningEmulator]:
    """Serve `emulator` (default: `build_emulator()`) on `host:port` (0 picks a free port).

    The kubeconfig is written to `kubeconfig`, or to a temporary file removed on exit. Writing it is the
    last step of starting, so its existence tells another process that the server accepts connections.
    """
    async with _serving(emulator, host, port, kubeconfig, shutdown_timeout) as (running, _):
        yield running


@contextlib.asynccontextmanager
async def _serving(
    emulator: ExtendedEmulator | None,
    host: str,
    port: int,
    kubeconfig: str | Path | None,
    shutdown_timeout: float,
) -> AsyncIterator[tuple[RunningEmulator, _Listener]]:
    """`serve_emulator`, and the listener that serves it (which can stop and start again)."""
    emulator = emulator if emulator is not None else build_emulator()
    with contextlib.ExitStack() as cleanup:
        if kubeconfig is None:
            tmpdir = cleanup.enter_context(tempfile.TemporaryDirectory(prefix="smoothscale-emulator-"))
            kubeconfig = Path(tmpdir) / "kubeconfig"
        async with emulator:
            listener = _Listener(emulator, host, shutdown_timeout)
            actual_port = await listener.start(port)
            try:
                url = f"http://{host}:{actual_port}"
                path = write_kubeconfig(kubeconfig, url)
                yield RunningEmulator(emulator=emulator, url=url, port=actual_port, kubeconfig=path), listener
            finally:
                await listener.stop()


class _Listener:
    """The emulator's HTTP listener, which can stop (every connection and watch ended, new ones refused, as
    when an API server's process is down) and start again on the same port with the same store."""

    def __init__(self, emulator: ExtendedEmulator, host: str, shutdown_timeout: float) -> None:
        self.emulator = emulator
        self.host = host
        self.shutdown_timeout = shutdown_timeout
        self.runner: aiohttp.web.ServerRunner | None = None

    async def start(self, port: int) -> int:
        """Listen on `port` (0 picks a free one); the port listened on."""
        self.emulator.reopen()
        server = aiohttp.web.Server(self.emulator, handler_cancellation=True, access_log=None)
        runner = aiohttp.web.ServerRunner(server, shutdown_timeout=self.shutdown_timeout)
        await runner.setup()
        try:
            await aiohttp.web.TCPSite(runner, self.host, port).start()
        except BaseException:
            await runner.cleanup()
            raise
        self.runner = runner
        return int(runner.addresses[0][1])

    async def stop(self) -> None:
        runner, self.runner = self.runner, None
        if runner is not None:
            self.emulator.close_watches()
            await runner.cleanup()


class EmulatorThread:
    """Serve an emulator from a thread with its own event loop; a context manager returning `RunningEmulator`.

    The emulator's state belongs to that loop: reach it over HTTP, or run a function there with `call()`.
    """

    def __init__(
        self,
        emulator: ExtendedEmulator | None = None,
        *,
        host: str = "127.0.0.1",
        port: int = 0,
        kubeconfig: str | Path | None = None,
        startup_timeout: float = 10.0,
    ) -> None:
        self._emulator = emulator
        self._options: dict[str, Any] = {"host": host, "port": port, "kubeconfig": kubeconfig}
        self._startup_timeout = startup_timeout
        self._thread = threading.Thread(target=self._run, name="smoothscale-emulator", daemon=True)
        self._started: concurrent.futures.Future[RunningEmulator] = concurrent.futures.Future()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._stop: asyncio.Event | None = None
        self._listener: _Listener | None = None

    def __enter__(self) -> RunningEmulator:
        self._thread.start()
        return self._started.result(timeout=self._startup_timeout)

    def __exit__(self, *exc_info: object) -> None:
        if self._loop is not None and self._stop is not None:
            self._loop.call_soon_threadsafe(self._stop.set)
        self._thread.join(timeout=10)

    def call(self, fn: Callable[[], T]) -> T:
        """Run `fn()` in the emulator's loop thread (e.g. to seed or inspect the store); return its result."""
        if self._loop is None:
            raise RuntimeError("the emulator thread is not running")

        async def run() -> T:
            return fn()

        return self._in_loop(run())

    def _run(self) -> None:
        try:
            asyncio.run(self._serve())
        except BaseException as exc:
            if not self._started.done():
                self._started.set_exception(exc)
            raise

    def stop_serving(self) -> None:
        """Stop listening, as when the API server's process stops: open connections and watch streams end,
        new connections are refused; the store is kept. `start_serving()` listens again on the same port."""
        listener = self._running_listener()
        self._in_loop(listener.stop())

    def start_serving(self) -> None:
        """Listen again on the port of the first start, with the store as it was (no-op while listening)."""
        listener = self._running_listener()
        if listener.runner is None:
            self._in_loop(listener.start(self._started.result().port))

    def _running_listener(self) -> _Listener:
        if self._listener is None:
            raise RuntimeError("the emulator thread is not running")
        return self._listener

    def _in_loop(self, work: Coroutine[Any, Any, T]) -> T:
        assert self._loop is not None  # set before the listener
        return asyncio.run_coroutine_threadsafe(work, self._loop).result(timeout=10)

    async def _serve(self) -> None:
        self._loop = asyncio.get_running_loop()
        self._stop = asyncio.Event()
        options = self._options
        serving = _serving(self._emulator, options["host"], options["port"], options["kubeconfig"], 1.0)
        async with serving as (running, listener):
            self._listener = listener
            self._started.set_result(running)
            await self._stop.wait()
