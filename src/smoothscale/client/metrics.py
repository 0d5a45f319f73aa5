"""The Prometheus metrics of Contract 3, which the operator scrapes from every pod to plan and hand over.

Each `TaskMetrics` has a registry of its own, so that several clients in one process (tests, an app with two
topologies) never share or collide on series. prometheus-client's HTTP server answers on every path, so one
server serves whatever `spec.metrics.path` says.
"""

from __future__ import annotations

import contextlib
import threading
from wsgiref.simple_server import WSGIServer

from prometheus_client import CollectorRegistry, Gauge, generate_latest, start_http_server

from smoothscale.contract import shared_names as contract
from smoothscale.contract.version import CONTRACT_VERSION


class TaskMetrics:
    """Per-task lag and changelog end, per-task processing rate and input lag, the pod's busy ratio, the
    last applied generation, and the contract version they follow."""

    def __init__(self) -> None:
        self.registry = CollectorRegistry()
        Gauge(
            contract.CONTRACT_VERSION_METRIC,
            "The version of the smoothscale contract these metrics follow.",
            registry=self.registry,
        ).set(CONTRACT_VERSION)
        labels = [contract.TASK_LABEL]
        self._lag = Gauge(
            contract.TASK_LAG_METRIC,
            "Offsets this pod's state of the task is behind its changelog end (every task it has state for).",
            labels,
            registry=self.registry,
        )
        self._end_offset = Gauge(
            contract.CHANGELOG_END_OFFSET_METRIC,
            "End offset of the task's changelog, as this pod last saw it.",
            labels,
            registry=self.registry,
        )
        self._process_rate = Gauge(
            contract.PROCESS_RATE_METRIC,
            "Records per second this pod processes for the task (0 when it does not process it).",
            labels,
            registry=self.registry,
        )
        self._input_lag = Gauge(
            contract.INPUT_LAG_METRIC,
            "Input records of the task this pod has not processed yet (only for tasks it runs active).",
            labels,
            registry=self.registry,
        )
        self._busy: Gauge | None = None  # registered by the first `set_busy_ratio`
        self._generation: Gauge | None = None  # registered by the first `set_generation`
        self._server: WSGIServer | None = None
        self._thread: threading.Thread | None = None

    def set_task(self, task: str, *, lag: int, end_offset: int) -> None:
        self._lag.labels(task).set(max(lag, 0))
        self._end_offset.labels(task).set(end_offset)

    def set_process_rate(self, task: str, records_per_second: float) -> None:
        self._process_rate.labels(task).set(records_per_second)

    def set_input_lag(self, task: str, records: int) -> None:
        self._input_lag.labels(task).set(max(records, 0))

    def set_busy_ratio(self, ratio: float) -> None:
        """The fraction of the last tick the pod's processing was busy (0..1): the operator's autoscaler
        divides what the pod processed by it to learn the pod's true capacity. Absent until the first call
        (a pod that never reports it gives only a lower bound of its capacity)."""
        if not 0 <= ratio <= 1:
            raise ValueError(f"busy ratio must be within 0..1, got {ratio}")
        if self._busy is None:
            self._busy = Gauge(
                contract.BUSY_RATIO_METRIC,
                "Fraction of the last tick this pod's processing was busy (0..1).",
                registry=self.registry,
            )
        self._busy.set(ratio)

    def forget_task(self, task: str) -> None:
        """The pod no longer has state for `task`: its series must go, or the planner sees a stale lag."""
        for gauge in (self._lag, self._end_offset, self._process_rate, self._input_lag):
            with contextlib.suppress(KeyError):  # never set for this task
                gauge.remove(task)

    def set_generation(self, generation: int) -> None:
        """The last generation this pod has fully applied. The series is absent until the first call (an
        unlabelled gauge would otherwise read 0 from the start): a pod that reports it follows its
        assignment."""
        if self._generation is None:
            self._generation = Gauge(
                contract.GENERATION_METRIC,
                "The last assignment generation this pod has fully applied (absent until it has read its "
                "assignment once).",
                registry=self.registry,
            )
        self._generation.set(generation)

    def render(self) -> bytes:
        """The text the endpoint serves (Prometheus exposition format)."""
        return generate_latest(self.registry)

    def serve(self, host: str, port: int) -> int:
        """Serve the metrics on `host:port` (port 0 picks a free one) from a daemon thread; the bound port."""
        self._server, self._thread = start_http_server(port, addr=host, registry=self.registry)
        return int(self._server.server_address[1])

    @property
    def serving(self) -> bool:
        return self._server is not None

    def close(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None
