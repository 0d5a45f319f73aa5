"""Lag collection: parsing Contract 3's metrics, and scraping many pods at once with timeouts."""

from __future__ import annotations

import asyncio
import dataclasses
from collections.abc import AsyncIterator

import pytest
from aiohttp import web
from hypothesis import given, settings
from hypothesis import strategies as st
from op_testkit import pod_record
from prometheus_client import CollectorRegistry, Gauge, start_http_server
from prometheus_client.parser import text_string_to_metric_families

from smoothscale.control.exposition import InvalidMetricsError, _samples, metrics_url, parse_metrics
from smoothscale.control.observed import FailureReason, PodMetrics, ScrapeFailure
from smoothscale.operator.scrape import Scraper
from smoothscale.resource import MetricNames, MetricsSpec

NAMES = MetricNames()
EXPOSITION = """\
# HELP smoothscale_task_lag Offsets behind the changelog end.
# TYPE smoothscale_task_lag gauge
smoothscale_task_lag{task="0_1",store="counts"} 5
smoothscale_task_lag{task="0_1",store="totals"} 7
smoothscale_task_lag{task="1_0"} 0
smoothscale_task_changelog_end_offset{task="0_1"} 1000
smoothscale_assignment_generation 12
process_cpu_seconds_total 3.5
"""


def test_lags_are_summed_over_a_tasks_stores() -> None:
    assert parse_metrics(EXPOSITION, NAMES) == PodMetrics(
        lags={"0_1": 12, "1_0": 0}, end_offsets={"0_1": 1000}, generation=12
    )


def test_an_app_may_use_other_metric_names() -> None:
    names = MetricNames(task_lag="app_lag", changelog_end_offset="app_end", assignment_generation="app_gen")
    text = 'app_lag{task="0_0"} 3\napp_end{task="0_0"} 9\napp_gen 2\nsmoothscale_task_lag{task="0_1"} 1\n'
    assert parse_metrics(text, names) == PodMetrics(lags={"0_0": 3}, end_offsets={"0_0": 9}, generation=2)


def test_a_pod_that_reports_nothing_yet_is_not_an_error() -> None:
    assert parse_metrics("", NAMES) == PodMetrics()


@pytest.mark.parametrize(
    "text",
    [
        "<html>Service Unavailable</html>",
        'smoothscale_task_lag{task="0_1"} -3',
        'smoothscale_task_lag{task="0_1"} NaN',
        "smoothscale_assignment_generation +Inf",
        "garbage {{{",
    ],
)
def test_garbage_is_invalid(text: str) -> None:
    with pytest.raises(InvalidMetricsError):
        parse_metrics(text, NAMES)


@settings(max_examples=300, deadline=None)
@given(st.text(max_size=300))
def test_any_text_parses_or_is_invalid_never_crashes(text: str) -> None:
    try:
        result = parse_metrics(text, NAMES)
    except InvalidMetricsError:
        return
    assert all(lag >= 0 for lag in result.lags.values())


def test_the_metrics_address_is_the_pods_ip_with_an_optional_port_override() -> None:
    metrics = MetricsSpec(port=8080, path="/metrics")
    pod = pod_record(0)
    assert metrics_url(pod, metrics) == "http://10.0.0.1:8080/metrics"
    assert (
        metrics_url(dataclasses.replace(pod, metrics_port=41000), metrics) == "http://10.0.0.1:41000/metrics"
    )
    assert metrics_url(dataclasses.replace(pod, ip="fd00::1"), metrics) == "http://[fd00::1]:8080/metrics"
    assert metrics_url(dataclasses.replace(pod, ip=None), metrics) is None


@pytest.fixture()
async def endpoints() -> AsyncIterator[str]:
    """One local server with an endpoint per behaviour."""

    async def ok(_: web.Request) -> web.Response:
        return web.Response(text=EXPOSITION)

    async def failing(_: web.Request) -> web.Response:
        return web.Response(status=500, text="boom")

    async def slow(_: web.Request) -> web.Response:
        await asyncio.sleep(1.5)
        return web.Response(text=EXPOSITION)

    async def garbage(_: web.Request) -> web.Response:
        return web.Response(body=b"\x00\xff{{{ not prometheus")

    application = web.Application()
    for path, handler in (("/ok", ok), ("/failing", failing), ("/slow", slow), ("/garbage", garbage)):
        application.router.add_get(path, handler)
    runner = web.AppRunner(application, shutdown_timeout=0.1, handler_cancellation=True)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    yield f"http://127.0.0.1:{runner.addresses[0][1]}"
    await runner.cleanup()


async def test_pods_are_scraped_concurrently_and_failures_are_results(endpoints: str) -> None:
    scraper = Scraper(timeout=0.3)
    urls = {f"pod-{name}": f"{endpoints}/{name}" for name in ("ok", "failing", "slow", "garbage")}
    urls["pod-gone"] = "http://127.0.0.1:9/metrics"
    loop = asyncio.get_running_loop()
    started = loop.time()
    try:
        results = await scraper.scrape_all(urls, NAMES)
    finally:
        await scraper.close()
    assert loop.time() - started < 1.0, "one slow pod costs one timeout, not one per pod"
    assert results["pod-ok"] == parse_metrics(EXPOSITION, NAMES)
    reasons = {pod: r.reason for pod, r in results.items() if isinstance(r, ScrapeFailure)}
    assert reasons == {
        "pod-failing": FailureReason.HTTP_ERROR,
        "pod-slow": FailureReason.UNREACHABLE,
        "pod-garbage": FailureReason.INVALID_METRICS,
        "pod-gone": FailureReason.UNREACHABLE,
    }


async def test_pods_waiting_for_a_free_slot_get_their_own_deadline(endpoints: str) -> None:
    """At most `concurrency` GETs are under way: pods that hang fill the slots, and the healthy pods waiting
    behind them start when a slot frees, with a deadline of their own (not one the hanging pods used up)."""
    scraper = Scraper(timeout=0.4, concurrency=2)
    urls = {f"pod-slow-{n}": f"{endpoints}/slow" for n in range(2)}
    urls |= {f"pod-ok-{n}": f"{endpoints}/ok" for n in range(3)}
    try:
        results = await scraper.scrape_all(urls, NAMES)
        # a round cut short leaves no GET behind: the slots are free for the next one
        cut = asyncio.ensure_future(scraper.scrape_all({"pod-slow-0": f"{endpoints}/slow"}, NAMES))
        await asyncio.sleep(0.05)
        cut.cancel()
        with pytest.raises(asyncio.CancelledError):
            await cut
        again = await scraper.scrape_all({f"pod-ok-{n}": f"{endpoints}/ok" for n in range(3)}, NAMES)
    finally:
        await scraper.close()
    reasons = {pod: r.reason for pod, r in results.items() if isinstance(r, ScrapeFailure)}
    assert reasons == {"pod-slow-0": FailureReason.UNREACHABLE, "pod-slow-1": FailureReason.UNREACHABLE}
    assert all(results[f"pod-ok-{n}"] == parse_metrics(EXPOSITION, NAMES) for n in range(3))
    assert all(r == parse_metrics(EXPOSITION, NAMES) for r in again.values())


SIMPLE_LINES = st.one_of(
    st.builds(
        lambda name, task, value, stamp: f'{name}{{task="{task}"}} {value}{stamp}',
        st.sampled_from(
            [NAMES.task_lag, NAMES.changelog_end_offset, NAMES.task_process_rate, "other_metric"]
        ),
        st.sampled_from(["0_1", "1_12", "", "a b", "x,y"]),
        st.one_of(
            st.integers(-5, 10**12).map(str), st.sampled_from(["1.5", ".5", "1e3", "NaN", "+Inf", "-Inf"])
        ),
        st.sampled_from(["", " 1700000000000"]),
    ),
    st.builds(lambda g: f"{NAMES.assignment_generation} {g}", st.integers(0, 99)),
    st.sampled_from(
        ["", "# TYPE smoothscale_task_lag gauge", "# HELP smoothscale_task_lag lag of a task", "# a comment"]
    ),
)


@settings(max_examples=300, deadline=None)
@given(st.lists(SIMPLE_LINES, max_size=12))
def test_the_fast_path_reads_what_prometheus_client_reads(lines: list[str]) -> None:
    """Plain expositions are read by a regular expression instead of prometheus-client's parser (much
    faster); both must see the same samples, or refuse alike."""
    text = "\n".join(lines) + "\n"
    try:
        expected = [
            (s.name, dict(s.labels), repr(float(s.value)))
            for family in text_string_to_metric_families(text)
            for s in family.samples
        ]
    except ValueError:
        expected = None
    try:
        fast = [(s.name, dict(s.labels), repr(float(s.value))) for s in _samples(text)]
    except ValueError:
        fast = None
    assert fast == expected


async def test_an_unchanged_exposition_is_not_parsed_again_and_a_changed_one_is() -> None:
    """A steady pod sends the same bytes every scrape: its last metrics are returned as they were (the very
    same value); any change, or another app's metric names, is parsed afresh."""
    served = {"text": EXPOSITION}

    async def metrics(_: web.Request) -> web.Response:
        return web.Response(text=served["text"])

    application = web.Application()
    application.router.add_get("/metrics", metrics)
    runner = web.AppRunner(application, shutdown_timeout=0.1)
    await runner.setup()
    await web.TCPSite(runner, "127.0.0.1", 0).start()
    urls = {"pod-0": f"http://127.0.0.1:{runner.addresses[0][1]}/metrics"}
    scraper = Scraper(timeout=2.0)
    try:
        first = (await scraper.scrape_all(urls, NAMES))["pod-0"]
        again = (await scraper.scrape_all(urls, NAMES))["pod-0"]
        assert first == parse_metrics(EXPOSITION, NAMES) and again is first
        served["text"] = EXPOSITION.replace("} 7", "} 8", 1)
        changed = (await scraper.scrape_all(urls, NAMES))["pod-0"]
        assert changed == parse_metrics(served["text"], NAMES) and changed != first
        served["text"] = "<html>oops</html>"
        broken = (await scraper.scrape_all(urls, NAMES))["pod-0"]
        assert isinstance(broken, ScrapeFailure) and broken.reason is FailureReason.INVALID_METRICS
        renamed = MetricNames(task_lag="other_lag")
        served["text"] = EXPOSITION
        other = (await scraper.scrape_all(urls, renamed))["pod-0"]
        assert other == parse_metrics(EXPOSITION, renamed) and other != first
    finally:
        await scraper.close()
        await runner.cleanup()


async def test_a_pod_served_by_prometheus_client_is_read() -> None:
    """The pods' own exporter (prometheus-client's HTTP server, which gzips for a client that accepts it)
    reads as the exposition it serves."""
    registry = CollectorRegistry()
    Gauge(NAMES.task_lag, "lag", ["task"], registry=registry).labels(task="0_1").set(7)
    server, thread = start_http_server(0, addr="127.0.0.1", registry=registry)
    scraper = Scraper(timeout=2.0)
    try:
        url = f"http://127.0.0.1:{server.server_port}/metrics"
        result = (await scraper.scrape_all({"pod-0": url}, NAMES))["pod-0"]
    finally:
        await scraper.close()
        server.shutdown()
        thread.join()
    assert isinstance(result, PodMetrics) and result.lags == {"0_1": 7}
