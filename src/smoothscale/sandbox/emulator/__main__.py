"""`python -m smoothscale.sandbox.emulator`: serve the emulator until SIGTERM or SIGINT.

Watch streams never end on their own, so after the stop signal the process closes them, gives the HTTP server
a moment, and then exits hard whatever is still running (NOTES.md: a standalone emulator otherwise hangs).
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import os
import signal
import sys
import threading
from collections.abc import Sequence

from .registry import build_emulator
from .server import serve_emulator

# How long a graceful stop may take before the process exits hard.
_STOP_GRACE_SECONDS = 3.0


def _parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m smoothscale.sandbox.emulator", description=__doc__)
    parser.add_argument("--host", default="127.0.0.1", help="address to listen on (default: 127.0.0.1)")
    parser.add_argument("--port", type=int, default=0, help="port to listen on (default: 0, a free port)")
    parser.add_argument("--kubeconfig", help="write a kubeconfig for the emulator to this path")
    parser.add_argument("--peering", action="store_true", help="also serve kopf's peering resources")
    parser.add_argument(
        "--log-level", default="WARNING", help="e.g. INFO to log every request (default: WARNING)"
    )
    parser.add_argument(
        "--bookmark-interval", type=float, default=5.0, help="seconds between watch bookmarks"
    )
    return parser.parse_args(argv)


async def _serve(args: argparse.Namespace) -> None:
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for signum in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(signum, stop.set)

    emulator = build_emulator(peering=args.peering, bookmark_interval=args.bookmark_interval)
    async with serve_emulator(
        emulator, host=args.host, port=args.port, kubeconfig=args.kubeconfig
    ) as running:
        print(f"smoothscale emulator serving {running.url} (kubeconfig: {running.kubeconfig})", flush=True)
        await stop.wait()
        # From here on, nothing may keep the process alive for long: a watchdog exits hard.
        watchdog = threading.Timer(_STOP_GRACE_SECONDS, os._exit, args=(0,))
        watchdog.daemon = True
        watchdog.start()


def main(argv: Sequence[str] | None = None) -> int:
    args = _parse_args(argv)
    logging.basicConfig(level=args.log_level.upper(), format="%(asctime)s %(name)s %(levelname)s %(message)s")
    asyncio.run(_serve(args))
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)  # no lingering threads or connections may delay the exit


if __name__ == "__main__":
    sys.exit(main())
