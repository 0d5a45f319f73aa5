"""Lag collection: every pod's Prometheus endpoint, scraped concurrently over kept-alive connections
(aiohttp, one connector for all pods), parsed with prometheus-client (plain expositions by one regular
expression, `_samples`).

A pod reports (Contract 3) `smoothscale_task_lag{task=...}` for every task it has state for,
`smoothscale_task_changelog_end_offset{task=...}` and `smoothscale_assignment_generation` (the generation it
has fully applied; the hand-over waits for it), and may report `smoothscale_task_process_rate{task=...}`
(records/s, the weights of `balanceBy: weight`), `smoothscale_task_input_lag{task=...}` and
`smoothscale_pod_busy_ratio` (the autoscaler's inputs). The first four names can be changed per app in
`spec.metrics.names`. Metrics the operator does not know are ignored; `smoothscale_contract_version` says
which contract version the others follow (absent: 1), and a pod of a newer one than the operator's is
refused (`contract.version`: it may mean something else by them).

A pod that cannot be reached in time, answers with an error, or sends something that is not a valid
exposition (unparseable text, a negative or non-finite lag, a body beyond `MAX_BODY_BYTES`) yields a
`ScrapeFailure`, never an exception: the caller reports it and plans nothing on the strength of missing data.
"""

from __future__ import annotations

import asyncio
import math
import re
import time
from collections.abc import Mapping
from typing import NamedTuple

import aiohttp
from prometheus_client.parser import text_string_to_metric_families

from smoothscale.contract import names as contract
from smoothscale.contract.version import UNVERSIONED, NewerContract, require_followable
from smoothscale.control.observed import (
    FailureReason,
    LearnedSubtopology,
    PodMetrics,
    ScrapeFailure,
    ScrapeResult,
)
from smoothscale.control.pods import PodInfo
from smoothscale.resource import MetricNames, MetricsSpec

MAX_BODY_BYTES = 16 * 1024 * 1024
KEEPALIVE_SECONDS = 60.0
"""How long a pod's idle connection is kept: longer than the slowest cadence a steady pod is scraped at."""
PARSED_KEPT_SECONDS = 60.0
"""A pod's last parsed exposition is kept this long unused (at least; at most twice as long)."""
_TASK_LABEL = "task"


class InvalidMetricsError(ValueError):
    """The text is not a Prometheus exposition the operator can trust."""


def metrics_url(pod: PodInfo, metrics: MetricsSpec) -> str | None:
    """Where the pod's metrics are: its IP, its port (or the pod's override), the app's path."""
    if pod.ip is None:
        return None
    host = f"[{pod.ip}]" if ":" in pod.ip else pod.ip
    port = pod.metrics_port if pod.metrics_port is not None else metrics.port
    return f"http://{host}:{port}{metrics.path}"


def parse_metrics(text: str, names: MetricNames) -> PodMetrics:
    """The lags, changelog end offsets, applied generation and processing rates in an exposition; raises
    InvalidMetricsError.

    Samples are matched by name (so counters' `_total` or extra labels do not matter); several samples of
    one task (e.g. one per store) are summed, as Contract 3 sums a task's logged stores.
    """
    lags: dict[str, int] = {}
    ends: dict[str, int] = {}
    rates: dict[str, float] = {}
    input_lags: dict[str, int] = {}
    busy: float | None = None
    generation: int | None = None
    fallbacks: dict[str, int] = {}
    topology: list[LearnedSubtopology] = []
    try:
        samples = _samples(text)
        _require_followable(samples)
        for sample in samples:
            if sample.name == names.assignment_generation:
                value = _count(sample.value, sample.name)
                generation = value if generation is None else max(generation, value)
                continue
            reason = sample.labels.get("reason")
            if sample.name == contract.ASSIGNOR_FALLBACKS_METRIC and reason:
                fallbacks[reason] = fallbacks.get(reason, 0) + _count(sample.value, sample.name)
                continue
            if sample.name == contract.BUSY_RATIO_METRIC:
                busy = min(_non_negative(sample.value, sample.name), 1.0)
                continue
            if sample.name == contract.TOPOLOGY_PARTITIONS_METRIC:
                topology.append(_subtopology(sample.labels, _count(sample.value, sample.name)))
                continue
            task = sample.labels.get(_TASK_LABEL)
            if sample.name == names.task_process_rate and task:
                rates[task] = rates.get(task, 0.0) + _non_negative(sample.value, sample.name)
                continue
            target = (
                lags
                if sample.name == names.task_lag
                else ends
                if sample.name == names.changelog_end_offset
                else input_lags
                if sample.name == contract.INPUT_LAG_METRIC
                else None
            )
            if target is not None and task:
                target[task] = target.get(task, 0) + _count(sample.value, sample.name)
    except InvalidMetricsError:
        raise
    except (ValueError, TypeError, IndexError, KeyError) as error:
        raise InvalidMetricsError(f"not a Prometheus text exposition: {error}") from error
    return PodMetrics(
        lags=lags,
        end_offsets=ends,
        generation=generation,
        process_rates=rates,
        input_lags=input_lags,
        busy_ratio=busy,
        fallbacks=fallbacks,
        topology=tuple(sorted(topology, key=lambda sub: sub.name)),
    )


class _Sample(NamedTuple):
    name: str
    labels: Mapping[str, str]
    value: float


_NAME = r"[a-zA-Z_:][a-zA-Z0-9_:]*"
_SIMPLE_LINE = re.compile(
    rf'(?:(?P<name>{_NAME})(?:\{{(?P<labels>(?:[a-zA-Z_][a-zA-Z0-9_]*="[^"\\]*",?)*)\}})?'
    r" (?P<value>[+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][+-]?[0-9]+)?|[+-]?Inf|NaN)(?: -?[0-9]+)?"
    rf"|# (?:TYPE {_NAME} (?:counter|gauge|untyped|summary|histogram)|HELP {_NAME}(?: [^\\]*)?)|)"
)
_SIMPLE_LABEL = re.compile(r'([a-zA-Z_][a-zA-Z0-9_]*)="([^"\\]*)"')


def _samples(text: str) -> list[_Sample]:
    """Every sample of an exposition. Pods write the plain form (no escapes, single spaces), which one
    regular expression reads several times faster than prometheus-client's general parser (parsing was
    the largest single cost of a steady operator: every pod, every scrape interval); any other line sends
    the whole text to that parser, so what is accepted and what it means stay the library's."""
    samples = []
    for line in text.split("\n"):
        match = _SIMPLE_LINE.fullmatch(line)
        if match is None:
            return [
                _Sample(s.name, s.labels, s.value)
                for f in text_string_to_metric_families(text)
                for s in f.samples
            ]
        name = match["name"]
        if name is not None:
            labels = dict(_SIMPLE_LABEL.findall(match["labels"] or ""))
            samples.append(_Sample(name, labels, float(match["value"])))
    return samples


def _require_followable(samples: list[_Sample]) -> None:
    """Refuses the metrics of a pod on a newer contract version before any of them is read (a newer contract
    may have changed what one means: its version explains a failure better than the metric would)."""
    version = max(
        (_count(s.value, s.name) for s in samples if s.name == contract.CONTRACT_VERSION_METRIC),
        default=UNVERSIONED,
    )
    try:
        require_followable(
            version,
            payload="the pod's report (its metrics)",
            upgrade="the smoothscale operator to the release of the pod's client library or bridge",
        )
    except NewerContract as error:
        raise InvalidMetricsError(str(error)) from error


def _subtopology(labels: Mapping[str, str], partitions: int) -> LearnedSubtopology:
    """One sample of the bridge's topology report; raises InvalidMetricsError without a subtopology."""
    name = labels.get("subtopology")
    if not name:
        raise InvalidMetricsError(f"{contract.TOPOLOGY_PARTITIONS_METRIC} without a subtopology label")

    def topics(label: str) -> tuple[str, ...]:
        return tuple(sorted(t for t in labels.get(label, "").split(",") if t))

    return LearnedSubtopology(
        name=name,
        partitions=partitions,
        stateful=labels.get("stateful") == "true",
        input_topics=topics("input_topics"),
        changelog_topics=topics("changelog_topics"),
    )


def _non_negative(value: float, name: str) -> float:
    if not math.isfinite(value) or value < 0:
        raise InvalidMetricsError(f"{name} = {value}: expected a finite, non-negative number")
    return value


def _count(value: float, name: str) -> int:
    return round(_non_negative(value, name))


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
    changelog ends) is not parsed again: its last `PodMetrics` is returned, the very same value, which
    also makes the round's comparison with the last observation (`control.step.Quiet`) an identity check.
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
