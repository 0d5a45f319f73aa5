"""GETs of the pods' metrics endpoints over kept-alive HTTP/1.1 connections, one per endpoint.

Why not aiohttp's client (which the operator keeps for the API server): a steady operator scrapes every pod
every scrape interval (1,000 pods at a 1 s interval: 1,000 GETs a second), and aiohttp's request machinery
(sessions, cookies, redirects, tracing, decompression: nothing a scrape needs) cost ~170 us of CPU a GET
here, most of a steady operator's CPU, against ~30 us for a GET on a kept connection. HTTP itself (status
line, headers, Content-Length or chunked framing, keep-alive) is parsed by httptools (llhttp, uvicorn's
parser); this module keeps connections and frames requests, nothing more.

A GET is a callback chain, not a coroutine (`KeepAliveClient.start`: the connection's protocol callbacks hand
the outcome to a listener): at 1,000 GETs a second a task, a timeout scope and a semaphore per GET, with the
event loop's hops between them, cost about as much CPU as the HTTP exchange itself. `get` wraps one in a
coroutine for callers that want one. What it does not do, on purpose:
redirects (a scrape target answering 3xx is a misconfigured endpoint: reported as such), compression (it
never asks for it; a compressed answer anyway is a `ProtocolError`), TLS (metrics URLs are plain http).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from dataclasses import dataclass
from functools import lru_cache
from typing import cast
from urllib.parse import urlsplit

import httptools

IDLE_SECONDS = 30.0
"""An idle connection unused this long is closed (a pod that went away without closing it leaves no socket
behind)."""


class ProtocolError(Exception):
    """The endpoint answered something that is not an HTTP response this client reads."""


class BodyTooLarge(Exception):
    """The response body exceeds the client's limit."""


@dataclass(frozen=True, slots=True)
class Response:
    status: int
    body: bytes


Outcome = Response | Exception
"""What a GET came to: the response, or why there is none."""
Listener = Callable[[Outcome], None]


@dataclass(frozen=True, slots=True)
class _Target:
    host: str
    port: int
    request: bytes


@lru_cache(maxsize=8192)
def _target(url: str) -> _Target:
    """Where to connect and what to send for `url` (an http URL); raises ValueError for anything else."""
    parts = urlsplit(url)
    if parts.scheme != "http" or not parts.hostname:
        raise ValueError(f"{url}: expected an http:// URL with a host")
    port = parts.port or 80
    path = parts.path or "/"
    if parts.query:
        path = f"{path}?{parts.query}"
    host = f"[{parts.hostname}]" if ":" in parts.hostname else parts.hostname
    request = f"GET {path} HTTP/1.1\r\nHost: {host}:{port}\r\nAccept: text/plain, */*\r\n\r\n"
    return _Target(parts.hostname, port, request.encode("ascii"))


class _Connection(asyncio.Protocol):
    """One connection to one endpoint, one request at a time; the parser's callbacks fill the response,
    which goes to the exchange's listener once the parser has returned (so that the listener may send the
    next request on this connection)."""

    def __init__(self, max_body: int) -> None:
        self._max_body = max_body
        self._transport: asyncio.Transport | None = None
        self._parser: httptools.HttpResponseParser | None = None
        self._listener: Listener | None = None
        self._response: Response | None = None
        self._body = bytearray()
        self._framed = False
        self._headers_done = False
        self.closed = False
        self.reusable = False
        self.answered = False
        """Some of the response arrived (a failure before that, on a reused connection, may be retried)."""
        self.idle_since = 0.0

    # -- asyncio.Protocol ----------------------------------------------------------------------------------

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        # a stream transport (uvloop's is not registered as an asyncio.Transport subclass)
        self._transport = cast(asyncio.Transport, transport)

    def data_received(self, data: bytes) -> None:
        parser = self._parser
        if parser is None:  # nothing was asked: the endpoint speaks out of turn
            self.close()
            return
        self.answered = True
        try:
            parser.feed_data(data)
        except httptools.HttpParserError as error:
            # httptools wraps what a callback raised (a refusal below) in its own error
            refused = error.__context__
            if self._response is not None:  # bytes beyond a complete response: it stands, the connection not
                self.close()
            elif isinstance(refused, ProtocolError | BodyTooLarge):
                self._fail(refused)
                return
            else:
                self._fail(ProtocolError(f"not an HTTP response: {error}"))
                return
        response = self._response
        if response is not None:
            self._response = None
            self._deliver(response)

    def eof_received(self) -> bool:
        return False  # close the transport: connection_lost ends the exchange

    def connection_lost(self, exc: Exception | None) -> None:
        self.closed = True
        self.reusable = False
        if self._listener is not None:
            parser = self._parser
            if self._headers_done and not self._framed and parser is not None:
                # a body delimited by the end of the connection
                self._deliver(Response(parser.get_status_code(), bytes(self._body)))
            else:
                self._fail(exc or ConnectionResetError("the endpoint closed the connection"))

    # -- httptools' callbacks --------------------------------------------------------------------------------

    def on_header(self, name: bytes, value: bytes) -> None:
        name = name.lower()
        if name in (b"content-length", b"transfer-encoding"):
            self._framed = True
        elif name == b"content-encoding" and value.strip().lower() != b"identity":
            raise ProtocolError(f"Content-Encoding {value.decode('latin-1')} (none was asked)")

    def on_headers_complete(self) -> None:
        self._headers_done = True

    def on_body(self, chunk: bytes) -> None:
        self._body += chunk
        if len(self._body) > self._max_body:
            raise BodyTooLarge(f"more than {self._max_body} bytes")

    def on_message_complete(self) -> None:
        parser = self._parser
        if parser is not None and self._listener is not None:
            self.reusable = parser.should_keep_alive()
            self._response = Response(parser.get_status_code(), bytes(self._body))

    # -- one exchange ----------------------------------------------------------------------------------------

    def send(self, request: bytes, listener: Listener) -> None:
        """Send `request`; `listener` gets the response or the failure, once (unless `abort` comes first)."""
        assert self._transport is not None
        self._parser = httptools.HttpResponseParser(self)
        self._listener = listener
        self._response = None
        self._body = bytearray()
        self._framed = self._headers_done = self.reusable = self.answered = False
        self._transport.write(request)

    def abort(self) -> None:
        """The exchange's caller gave up: close, and tell no one."""
        self._listener = self._parser = self._response = None
        self.close()

    def close(self) -> None:
        self.closed = True
        self.reusable = False
        if self._transport is not None:
            self._transport.close()

    def _deliver(self, outcome: Outcome) -> None:
        listener = self._listener
        self._listener = self._parser = None
        if listener is not None:
            listener(outcome)

    def _fail(self, error: Exception) -> None:
        self.close()
        self._deliver(error)


class Exchange:
    """One GET under way (`KeepAliveClient.start`): its listener gets the outcome once, unless `abort`
    comes first."""

    __slots__ = ("_client", "_connection", "_listener", "_opening", "_target")

    def __init__(self, client: KeepAliveClient, target: _Target, listener: Listener) -> None:
        self._client = client
        self._target = target
        self._listener: Listener | None = listener
        self._connection: _Connection | None = None
        self._opening: asyncio.Task[None] | None = None

    def abort(self) -> None:
        """Give up (the caller's deadline): the connection is closed, the listener is not called."""
        self._listener = None
        if self._opening is not None:
            self._opening.cancel()
            self._opening = None
        if self._connection is not None:
            self._connection.abort()
            self._connection = None

    def _send(self, connection: _Connection, *, kept: bool) -> None:
        self._connection = connection
        connection.send(self._target.request, self._answered_on_kept if kept else self._answered)

    def _open(self) -> None:
        self._opening = asyncio.get_running_loop().create_task(self._connect())

    async def _connect(self) -> None:
        try:
            connection = await self._client.connect(self._target)
        except Exception as error:  # the listener is told, and decides what counts
            self._opening = None
            self._deliver(error)
            return
        self._opening = None
        if self._listener is None:
            connection.close()
            return
        self._send(connection, kept=False)

    def _answered_on_kept(self, outcome: Outcome) -> None:
        connection = self._connection
        if (
            isinstance(outcome, OSError | ProtocolError)
            and connection is not None
            and not connection.answered
        ):
            self._connection = None  # closed before it answered (its idle timeout): send it once more
            self._open()
            return
        self._answered(outcome)

    def _answered(self, outcome: Outcome) -> None:
        connection = self._connection
        self._connection = None
        if connection is not None and isinstance(outcome, Response):
            self._client.release(connection, self._target)
        self._deliver(outcome)

    def _deliver(self, outcome: Outcome) -> None:
        listener = self._listener
        self._listener = None
        if listener is not None:
            listener(outcome)


class KeepAliveClient:
    """GETs of http URLs, each endpoint's connection kept for the next GET (one per operator).

    Failures are outcomes (`start`) or raise (`get`): OSError (connecting, a reset), ProtocolError,
    BodyTooLarge; ValueError (not an http URL) raises from either. A GET on a kept connection that the
    endpoint closed meanwhile (its idle timeout) is sent once more on a new connection, as browsers and
    aiohttp do: GETs are safe to repeat. The caller bounds the time (`Exchange.abort`, or cancelling
    `get`); a GET cut short closes its connection.
    """

    def __init__(self, *, max_body: int) -> None:
        self._max_body = max_body
        self._idle: dict[tuple[str, int], _Connection] = {}
        self._swept = time.monotonic()

    def start(self, url: str, listener: Listener) -> Exchange:
        """Start a GET of `url`; `listener` is called with its outcome, from the event loop's callbacks
        (never from within `start`); raises ValueError if `url` is not an http URL."""
        target = _target(url)
        exchange = Exchange(self, target, listener)
        kept = self._idle.pop((target.host, target.port), None)
        if kept is not None and not kept.closed:
            exchange._send(kept, kept=True)
        else:
            exchange._open()
        return exchange

    async def get(self, url: str) -> Response:
        """One GET, as a coroutine; raises what `start`'s listener would be given."""
        answer: asyncio.Future[Response] = asyncio.get_running_loop().create_future()

        def settle(outcome: Outcome) -> None:
            if answer.done():
                return
            if isinstance(outcome, Response):
                answer.set_result(outcome)
            else:
                answer.set_exception(outcome)

        exchange = self.start(url, settle)
        try:
            return await answer
        finally:
            exchange.abort()  # nothing once answered; closes the connection of a GET cut short

    async def close(self) -> None:
        for connection in self._idle.values():
            connection.close()
        self._idle.clear()

    async def connect(self, target: _Target) -> _Connection:
        loop = asyncio.get_running_loop()
        _, connection = await loop.create_connection(
            lambda: _Connection(self._max_body), target.host, target.port
        )
        return connection

    def release(self, connection: _Connection, target: _Target) -> None:
        """A connection that answered: kept for the endpoint's next GET if it may be, else closed."""
        if not connection.reusable or connection.closed:
            connection.close()
            return
        now = time.monotonic()
        connection.idle_since = now
        key = (target.host, target.port)
        previous = self._idle.get(key)
        if previous is not None:
            previous.close()
        self._idle[key] = connection
        if now - self._swept >= IDLE_SECONDS:
            self._swept = now
            for stale in [k for k, c in self._idle.items() if c.closed or now - c.idle_since >= IDLE_SECONDS]:
                self._idle.pop(stale).close()
