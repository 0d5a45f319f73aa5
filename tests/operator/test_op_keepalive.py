"""The scrape's HTTP client (`keepalive`): a kept connection per endpoint, HTTP read by httptools.

The server here is a raw socket server, so that each test controls the exact bytes an endpoint answers
(framing, keep-alive, closing) and counts the connections it was sent.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field

import pytest

from smoothscale.operator.keepalive import BodyTooLarge, KeepAliveClient, ProtocolError, Response

BODY = b'smoothscale_task_lag{task="0_1"} 5\n'
LENGTH = b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n%s" % (len(BODY), BODY)


@dataclass
class Endpoint:
    """Answers request n of connection c with `answer(c, n)` (both counted from 0), then closes the
    connection if `close_after(c, n)`."""

    answer: Callable[[int, int], bytes]
    close_after: Callable[[int, int], bool] = lambda _c, _n: False
    connections: int = 0
    requests: list[bytes] = field(default_factory=list)
    url: str = ""


@pytest.fixture()
async def serve() -> AsyncIterator[Callable[[Endpoint], asyncio.Future[Endpoint]]]:
    servers: list[asyncio.Server] = []

    async def start(endpoint: Endpoint) -> Endpoint:
        async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            c = endpoint.connections
            endpoint.connections += 1
            n = 0
            try:
                while True:
                    request = await reader.readuntil(b"\r\n\r\n")
                    endpoint.requests.append(request)
                    writer.write(endpoint.answer(c, n))
                    await writer.drain()
                    if endpoint.close_after(c, n):
                        break
                    n += 1
            except (asyncio.IncompleteReadError, ConnectionError):
                pass
            finally:
                writer.close()

        server = await asyncio.start_server(handle, "127.0.0.1", 0)
        servers.append(server)
        endpoint.url = f"http://127.0.0.1:{server.sockets[0].getsockname()[1]}/metrics?x=1"
        return endpoint

    yield start  # type: ignore[misc]
    for server in servers:
        server.close()


async def test_a_kept_connection_serves_every_get_of_its_endpoint(serve) -> None:  # type: ignore[no-untyped-def]
    endpoint = await serve(Endpoint(lambda _c, _n: LENGTH))
    client = KeepAliveClient(max_body=1024)
    try:
        responses = [await client.get(endpoint.url) for _ in range(5)]
    finally:
        await client.close()
    assert responses == [Response(200, BODY)] * 5
    assert endpoint.connections == 1
    assert endpoint.requests[0].startswith(b"GET /metrics?x=1 HTTP/1.1\r\nHost: 127.0.0.1:")


CHUNKED = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\n%s\r\n%x\r\n%s\r\n0\r\n\r\n" % (
    BODY[:5],
    len(BODY) - 5,
    BODY[5:],
)
UNTIL_CLOSED = b"HTTP/1.0 200 OK\r\nContent-Type: text/plain\r\n\r\n" + BODY
CLOSING = b"HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: %d\r\n\r\n%s" % (len(BODY), BODY)


@pytest.mark.parametrize(
    ("answer", "reconnects"),
    [
        (CHUNKED, False),
        (UNTIL_CLOSED, True),  # HTTP/1.0 without a length: the body ends with the connection
        (CLOSING, True),  # the endpoint says it closes
    ],
    ids=["chunked", "until-closed", "connection-close"],
)
async def test_every_framing_of_the_body_reads_the_same(serve, answer: bytes, reconnects: bool) -> None:  # type: ignore[no-untyped-def]
    endpoint = await serve(Endpoint(lambda _c, _n: answer, close_after=lambda _c, _n: reconnects))
    client = KeepAliveClient(max_body=1024)
    try:
        first, second = await client.get(endpoint.url), await client.get(endpoint.url)
    finally:
        await client.close()
    assert first == second == Response(200, BODY)
    assert endpoint.connections == (2 if reconnects else 1)


async def test_a_kept_connection_the_endpoint_closed_is_replaced_without_a_failure(serve) -> None:  # type: ignore[no-untyped-def]
    """The endpoint closes each connection after its first answer without saying so (an idle timeout): the
    client notices while the connection is idle, and opens a new one."""
    endpoint = await serve(Endpoint(lambda _c, _n: LENGTH, close_after=lambda _c, _n: True))
    client = KeepAliveClient(max_body=1024)
    try:
        for _ in range(3):
            assert await client.get(endpoint.url) == Response(200, BODY)
            await asyncio.sleep(0.05)  # the close reaches the client while the connection is idle
    finally:
        await client.close()
    assert endpoint.connections == 3


async def test_a_get_the_endpoint_drops_unanswered_on_a_kept_connection_is_sent_again(serve) -> None:  # type: ignore[no-untyped-def]
    """The endpoint closes the kept connection as the second GET arrives (its idle timeout, crossing the
    request): a GET is safe to repeat, so it is sent again on a new connection instead of failing."""
    endpoint = await serve(
        Endpoint(lambda c, n: b"" if (c, n) == (0, 1) else LENGTH, close_after=lambda c, n: (c, n) == (0, 1))
    )
    client = KeepAliveClient(max_body=1024)
    try:
        assert await client.get(endpoint.url) == Response(200, BODY)
        assert await client.get(endpoint.url) == Response(200, BODY)
    finally:
        await client.close()
    assert (endpoint.connections, len(endpoint.requests)) == (2, 3)


@pytest.mark.parametrize(
    ("answer", "error"),
    [
        (b"<html>not http</html>\r\n\r\n", ProtocolError),
        (b"HTTP/1.1 200 OK\r\nContent-Encoding: gzip\r\nContent-Length: 3\r\n\r\nabc", ProtocolError),
        (b"HTTP/1.1 200 OK\r\nContent-Length: 2000\r\n\r\n" + b"x" * 2000, BodyTooLarge),
        (b"HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\nshort", ConnectionResetError),
    ],
    ids=["not-http", "compressed", "too-large", "cut-short"],
)
async def test_what_is_not_a_readable_answer_raises(serve, answer: bytes, error: type[Exception]) -> None:  # type: ignore[no-untyped-def]
    endpoint = await serve(Endpoint(lambda _c, _n: answer, close_after=lambda _c, _n: True))
    client = KeepAliveClient(max_body=1024)
    try:
        with pytest.raises(error):
            await client.get(endpoint.url)
        # the client is still usable, and a failed exchange left no connection behind to reuse
        with pytest.raises(error):
            await client.get(endpoint.url)
    finally:
        await client.close()
    assert endpoint.connections == 2


async def test_a_status_other_than_200_is_returned_with_its_body(serve) -> None:  # type: ignore[no-untyped-def]
    endpoint = await serve(
        Endpoint(lambda _c, _n: b"HTTP/1.1 503 Unavailable\r\nContent-Length: 4\r\n\r\nbusy")
    )
    client = KeepAliveClient(max_body=1024)
    try:
        assert await client.get(endpoint.url) == Response(503, b"busy")
    finally:
        await client.close()


async def test_only_plain_http_urls_are_fetched() -> None:
    client = KeepAliveClient(max_body=1024)
    with pytest.raises(ValueError, match="http://"):
        await client.get("https://10.0.0.1:8080/metrics")
    with pytest.raises(OSError):
        await client.get("http://127.0.0.1:9/metrics")  # nothing listens on the discard port
