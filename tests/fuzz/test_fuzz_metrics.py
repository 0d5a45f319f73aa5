"""Metrics text from a misbehaving pod never crashes the scraper: whatever bytes come back, the scrape is
a `PodMetrics` (only finite, non-negative values taken) or a `ScrapeFailure`, never an exception.

`tests/operator/test_op_scrape.py` already feeds plain random text to the parser; here the text is made of
the pieces an exposition is made of (names the operator looks for, labels, odd values, comments, type
lines, timestamps), so that the fuzzing reaches the parser's deeper paths, and it goes over real HTTP."""

from __future__ import annotations

import asyncio
import math

from aiohttp import web
from hypothesis import given, settings
from hypothesis import strategies as st

from smoothscale.control.exposition import InvalidMetricsError, parse_metrics
from smoothscale.control.observed import PodMetrics, ScrapeFailure
from smoothscale.operator.scrape import Scraper
from smoothscale.resource import MetricNames

NAMES = MetricNames()
METRIC_NAMES = st.sampled_from(
    [
        NAMES.task_lag,
        NAMES.changelog_end_offset,
        NAMES.assignment_generation,
        NAMES.task_process_rate,
        f"{NAMES.task_lag}_total",
        "process_cpu_seconds_total",
        "x",
        "",
    ]
)
VALUES = st.one_of(
    st.sampled_from(["0", "-0", "1e308", "1e309", "-1", "NaN", "+Inf", "-Inf", "0x10", "1_000", "", "nan"]),
    st.integers(-(2**70), 2**70).map(str),
    st.floats(allow_nan=True, allow_infinity=True).map(repr),
)
LABEL_VALUES = st.one_of(
    st.sampled_from(["0_1", "", "\\n", '\\"', "\\\\", "ü", "0_1\\"]), st.text(max_size=8)
)
LABELS = st.one_of(
    st.just(""),
    st.lists(
        st.tuples(st.sampled_from(["task", "store", "le", "quantile", "", "9x"]), LABEL_VALUES),
        max_size=3,
    ).map(lambda pairs: "{" + ",".join(f'{k}="{v}"' for k, v in pairs) + "}"),
    st.sampled_from(["{", "{task=}", '{task="0_1"', "{,}", '{task="a",task="b"}']),
)
SAMPLE_LINES = st.builds(
    lambda name, labels, value, timestamp: f"{name}{labels} {value}{timestamp}",
    METRIC_NAMES,
    LABELS,
    VALUES,
    st.sampled_from(["", " 1700000000000", " x", " -1"]),
)
META_LINES = st.builds(
    lambda kind, name, rest: f"# {kind} {name} {rest}",
    st.sampled_from(["TYPE", "HELP", "EOF", "UNIT", ""]),
    METRIC_NAMES,
    st.sampled_from(["gauge", "counter", "histogram", "summary", "untyped", "info", "bogus", "", "\\"]),
)
EXPOSITIONS = st.lists(st.one_of(SAMPLE_LINES, META_LINES, st.text(max_size=20)), max_size=12).map(
    lambda lines: "\n".join(lines) + "\n"
)


def _trusted(metrics: PodMetrics) -> bool:
    """What the operator plans on is finite and non-negative."""
    numbers = [*metrics.lags.values(), *metrics.end_offsets.values(), *metrics.process_rates.values()]
    if metrics.generation is not None:
        numbers.append(metrics.generation)
    return all(math.isfinite(n) and n >= 0 for n in numbers)


@given(EXPOSITIONS)
@settings(max_examples=400, deadline=None)
def test_exposition_like_garbage_parses_or_is_invalid(text: str) -> None:
    try:
        metrics = parse_metrics(text, NAMES)
    except InvalidMetricsError:
        return
    assert _trusted(metrics)


async def _scrape_once(body: bytes, status: int) -> PodMetrics | ScrapeFailure:
    async def serve(_: web.Request) -> web.Response:
        return web.Response(body=body, status=status, content_type="text/plain")

    app = web.Application()
    app.router.add_get("/metrics", serve)
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = runner.addresses[0][1]
    scraper = Scraper(timeout=2.0)
    try:
        return (await scraper.scrape_all({"pod": f"http://127.0.0.1:{port}/metrics"}, NAMES))["pod"]
    finally:
        await scraper.close()
        await runner.cleanup()


@given(
    st.one_of(st.binary(max_size=300), EXPOSITIONS.map(lambda text: text.encode("utf-8", "surrogatepass"))),
    st.sampled_from([200, 200, 200, 404, 500]),
)
@settings(max_examples=60, deadline=None)
def test_any_body_over_http_is_a_result_never_an_exception(body: bytes, status: int) -> None:
    result = asyncio.run(_scrape_once(body, status))
    assert isinstance(result, ScrapeFailure) or _trusted(result)
    if status != 200:
        assert isinstance(result, ScrapeFailure)
