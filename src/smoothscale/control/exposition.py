"""A pod's report (Contract 3), read: where a pod serves it, and the Prometheus exposition it serves parsed
into `PodMetrics`.

A pod reports `smoothscale_task_lag{task=...}` for every task it has state for,
`smoothscale_task_changelog_end_offset{task=...}` and `smoothscale_assignment_generation` (the generation it
has fully applied; the hand-over waits for it), and may report `smoothscale_task_process_rate{task=...}`
(records/s, the weights of `balanceBy: weight`), `smoothscale_task_input_lag{task=...}` and
`smoothscale_pod_busy_ratio` (the autoscaler's inputs). The first four names can be changed per app in
`spec.metrics.names`. Metrics the operator does not know are ignored; `smoothscale_contract_version` says
which contract version the others follow (absent: 1), and a pod of a newer one than the operator's is
refused (`contract.version`: it may mean something else by them). Plain expositions are read by one regular
expression (`_samples`), the others by prometheus-client's text parser (pure: the one part of that library
the core uses).

The operator's scraper (`operator.scrape`, the I/O) and the CLI's commands read pods through this module:
which pods are read and what counts as a pod's report are decided once.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from typing import NamedTuple

from prometheus_client.parser import text_string_to_metric_families

from smoothscale.contract import shared_names as contract
from smoothscale.contract.version import UNVERSIONED, NewerContract, require_followable
from smoothscale.resource import MetricNames, MetricsSpec

from .observed import LearnedSubtopology, PodMetrics
from .pods import PodInfo

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


def scrape_targets(pods: Sequence[PodInfo], metrics: MetricsSpec) -> dict[str, str]:
    """The pods whose report is read, and where: every running pod with an address (a pod without one has
    not started: nothing to ask; a pod being deleted is not asked)."""
    return {
        p.name: url
        for p in pods
        if p.alive and not p.deleting and (url := metrics_url(p, metrics)) is not None
    }


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
