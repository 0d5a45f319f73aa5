"""A loop in a thread of its own for the length of a `with` block: an order feed, a watch."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager


@contextmanager
def running(body: Callable[[threading.Event], None], name: str, join_timeout: float = 30) -> Iterator[None]:
    """Run `body(stop)` in a daemon thread; on leaving the block set `stop` and wait for `body` to return
    (a body polls `stop` at least every few seconds)."""
    stop = threading.Event()
    thread = threading.Thread(target=body, args=(stop,), name=name, daemon=True)
    thread.start()
    try:
        yield
    finally:
        stop.set()
        thread.join(join_timeout)
