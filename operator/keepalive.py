"""GETs of the pods' metrics endpoints over kept-alive HTTP/1.1 connections, one per endpoint.

Why not aiohttp's client (which the operator keeps for the API server): a steady operator scrapes every pod
every scrape interval (1,000 pods at a 1 s interval: 1,000 GETs a second), and aiohttp's request machinery
(sessions, cookies, redirects, tracing, decompression: nothing a scrape needs) cost ~170 us of CPU a GET
here, most of a steady operator's CPU, against ~30 us for a GET on a kept connection. HTTP itself (status
line, headers, Content-Length or chunked framing, keep-alive) is parsed by httptools (llhttp, uvicorn's
parser); this module keeps connections and frames requests, nothing more. What it does not do, on purpose:
redirects (a scrape target answering 3xx is a misconfigured endpoint: reported as such), compression (it
never asks for it; a compressed answer anyway is a `ProtocolError`), TLS (metrics URLs are plain http).
"""

from __future__ import annotations

import asyncio
import time
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
    """One connection to one endpoint, one request at a time; the parser's callbacks fill the response."""

    def __init__(self, max_body: int) -> None:
        self._max_body = max_body
        self._transport: asyncio.Transport | None = None
        self._parser: httptools.HttpResponseParser | None = None
        self._waiter: asyncio.Future[Response] | None = None
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
        if self._parser is None:  # nothing was asked: the endpoint speaks out of turn
            self.close()
            return
        self.answered = True
        try:
            self._parser.feed_data(data)
        except httptools.HttpParserError as error:
            # httptools wraps what a callback raised (a refusal below) in its own error
            refused = error.__context__
            if isinstance(refused, ProtocolError | BodyTooLarge):
                self._fail(refused)
            else:
                self._fail(ProtocolError(f"not an HTTP response: {error}"))

    def eof_received(self) -> bool:
        return False  # close the transport: connection_lost ends the exchange

    def connection_lost(self, exc: Exception | None) -> None:
        self.closed = True
        self.reusable = False
        if self._waiter is not None and not self._waiter.done():
            if self._headers_done and not self._framed:  # a body delimited by the end of the connection
                self._complete()
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
        self.reusable = self._parser is not None and self._parser.should_keep_alive()
        self._complete()

    # -- one exchange ----------------------------------------------------------------------------------------

    def send(self, request: bytes) -> asyncio.Future[Response]:
        assert self._transport is not None
        self._parser = httptools.HttpResponseParser(self)
        self._waiter = asyncio.get_running_loop().create_future()
        self._body = bytearray()
        self._framed = self._headers_done = self.reusable = self.answered = False
        self._transport.write(request)
        return self._waiter

    def close(self) -> None:
        self.closed = True
        self.reusable = False
        if self._transport is not None:
            self._transport.close()

    def _complete(self) -> None:
        waiter, parser = self._waiter, self._parser
        self._waiter = self._parser = None
        if waiter is not None and parser is not None and not waiter.done():
            waiter.set_result(Response(parser.get_status_code(), bytes(self._body)))

    def _fail(self, error: Exception) -> None:
        waiter = self._waiter
        self._waiter = self._parser = None
        if waiter is not None and not waiter.done():
            waiter.set_exception(error)
        self.close()


class KeepAliveClient:
    """GETs of http URLs, each endpoint's connection kept for the next GET (one per operator).

    Failures raise: OSError (connecting, a reset), ProtocolError, BodyTooLarge, ValueError (not an http URL).
    A GET on a kept connection that the endpoint closed meanwhile (its idle timeout) is sent once more on a
    new connection, as browsers and aiohttp do: GETs are safe to repeat. The caller bounds the time
    (`asyncio.timeout`); a GET cut short closes its connection.
    """

    def __init__(self, *, max_body: int) -> None:
        self._max_body = max_body
        self._idle: dict[tuple[str, int], _Connection] = {}
        self._swept = time.monotonic()

    async def get(self, url: str) -> Response:
        target = _target(url)
        kept = self._idle.pop((target.host, target.port), None)
        if kept is not None and not kept.closed:
            try:
                return await self._exchange(kept, target)
            except (OSError, ProtocolError):
                if kept.answered:
                    raise
        return await self._exchange(await self._connect(target), target)

    async def close(self) -> None:
        for connection in self._idle.values():
            connection.close()
        self._idle.clear()

    async def _connect(self, target: _Target) -> _Connection:
        loop = asyncio.get_running_loop()
        _, connection = await loop.create_connection(
            lambda: _Connection(self._max_body), target.host, target.port
        )
        return connection

    async def _exchange(self, connection: _Connection, target: _Target) -> Response:
        try:
            response = await connection.send(target.request)
        except BaseException:
            connection.close()
            raise
        if connection.reusable and not connection.closed:
            self._keep(connection, (target.host, target.port))
        else:
            connection.close()
        return response

    def _keep(self, connection: _Connection, key: tuple[str, int]) -> None:
        now = time.monotonic()
        connection.idle_since = now
        previous = self._idle.get(key)
        if previous is not None:
            previous.close()
        self._idle[key] = connection
        if now - self._swept >= IDLE_SECONDS:
            self._swept = now
            for stale in [k for k, c in self._idle.items() if c.closed or now - c.idle_since >= IDLE_SECONDS]:
                self._idle.pop(stale).close()
