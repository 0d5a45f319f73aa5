"""Lag collection: every pod's Prometheus endpoint, scraped concurrently over kept-alive connections
(aiohttp, one connector for all pods); what a pod reports and how it is read is `control.exposition`.

A pod that cannot be reached in time, answers with an error, or sends something that is not a valid
exposition (unparseable text, a negative or non-finite lag, a body beyond `MAX_BODY_BYTES`) yields a
`ScrapeFailure`, never an exception: the caller reports it and plans nothing on the strength of missing data.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Mapping
from typing import NamedTuple

import aiohttp

from smoothscale.control.exposition import InvalidMetricsError, parse_metrics
from smoothscale.control.observed import FailureReason, PodMetrics, ScrapeFailure, ScrapeResult
from smoothscale.resource import MetricNames

MAX_BODY_BYTES = 16 * 1024 * 1024
KEEPALIVE_SECONDS = 60.0
"""How long a pod's idle connection is kept: longer than the slowest cadence a steady pod is scraped at."""
PARSED_KEPT_SECONDS = 60.0
"""A pod's last parsed exposition is kept this long unused (at least; at most twice as long)."""


class _Parsed(NamedTuple):
    body: bytes
    names: MetricNames
    metrics: PodMetrics


class Scraper:
    """Scrapes many pods at once through one aiohttp session (one connector: a kept-alive connection per
    pod); one per operator.

    Each pod's GET has its own deadline (`timeout`), from the moment it starts; at most `concurrency` GETs
    are under way at once (the rest wait their turn, their deadline not yet running, so that pods that hang
    cannot make healthy pods queued behind them time out).

    A pod whose exposition is byte for byte the one it sent last time (a steady pod: no lag, the same
    changelog ends) is not parsed again: its last `PodMetrics` is returned, the very same value (which the
    round's comparison with the last observation, `control.step.Stepped.repeats`, finds equal at once).
    """

    def __init__(self, *, timeout: float, concurrency: int = 64) -> None:
        self._timeout = timeout
        self._concurrency = concurrency
        self._slots: asyncio.Semaphore | None = None
        self._session: aiohttp.ClientSession | None = None
        self._parsed: dict[str, _Parsed] = {}
        self._parsed_before: dict[str, _Parsed] = {}
        """The generation of `_parsed` before the last rotation: an address unused for a whole generation
        (a pod gone) is dropped at the next one."""
        self._rotated = time.monotonic()

    async def close(self) -> None:
        if self._session is not None:
            await self._session.close()
            self._session = None

    async def scrape_all(self, urls: Mapping[str, str], names: MetricNames) -> dict[str, ScrapeResult]:
        """Every pod's result, by pod name. Cancelled, it leaves no GET behind."""
        now = time.monotonic()
        if now - self._rotated >= PARSED_KEPT_SECONDS:
            self._parsed_before, self._parsed, self._rotated = self._parsed, {}, now
        if not urls:
            return {}
        results = await asyncio.gather(*(self._scrape(url, names) for url in urls.values()))
        return dict(zip(urls, results, strict=True))

    def _open(self) -> tuple[aiohttp.ClientSession, asyncio.Semaphore]:
        """The session and the slots, made on first use: both belong to the running event loop."""
        if self._session is None or self._slots is None:
            # the cap is the semaphore's (a queued GET's deadline must not run): the connector has none
            connector = aiohttp.TCPConnector(limit=0, keepalive_timeout=KEEPALIVE_SECONDS)
            # no Accept-Encoding: prometheus-client would gzip every exposition (work on both sides)
            self._session = aiohttp.ClientSession(connector=connector, skip_auto_headers=("Accept-Encoding",))
            self._slots = asyncio.Semaphore(self._concurrency)
        return self._session, self._slots

    async def _scrape(self, url: str, names: MetricNames) -> ScrapeResult:
        session, slots = self._open()
        async with slots:
            try:
                async with asyncio.timeout(self._timeout):
                    body = await _get(session, url)
            except TimeoutError:
                return ScrapeFailure(
                    FailureReason.UNREACHABLE, f"GET {url}: no answer within {self._timeout} s"
                )
            except (aiohttp.ClientError, OSError, ValueError) as error:
                detail = str(error) or type(error).__name__
                return ScrapeFailure(FailureReason.UNREACHABLE, f"GET {url}: {detail}")
        if isinstance(body, ScrapeFailure):
            return body
        return self._parse(url, body, names)

    def _parse(self, url: str, body: bytes, names: MetricNames) -> ScrapeResult:
        last = self._parsed.get(url) or self._parsed_before.get(url)
        if last is not None and last.body == body and (last.names is names or last.names == names):
            self._parsed[url] = last
            return last.metrics
        try:
            metrics = parse_metrics(body.decode("utf-8", errors="replace"), names)
        except InvalidMetricsError as error:
            return ScrapeFailure(FailureReason.INVALID_METRICS, f"GET {url}: {error}")
        self._parsed[url] = _Parsed(body, names, metrics)
        return metrics


async def _get(session: aiohttp.ClientSession, url: str) -> bytes | ScrapeFailure:
    """The body of a 200 answer, at most `MAX_BODY_BYTES` of it, or why there is none to parse."""
    async with session.get(url, allow_redirects=False) as response:
        if response.status != 200:
            return ScrapeFailure(FailureReason.HTTP_ERROR, f"GET {url}: HTTP {response.status}")
        body = bytearray()
        async for chunk in response.content.iter_any():
            body += chunk
            if len(body) > MAX_BODY_BYTES:
                return ScrapeFailure(
                    FailureReason.INVALID_METRICS, f"GET {url}: more than {MAX_BODY_BYTES} bytes"
                )
        return bytes(body)
