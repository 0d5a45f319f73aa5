"""The chart's alert rules and Grafana dashboard against a real Prometheus (Debian's, on loopback) scraping
the operator of a running sandbox (the demo's app, its sample workers): `smoothscale status` shows the
scale-out's progress and ETA; through the scale-out and a frozen pod,
`SmoothscaleScrapeFailures` and `SmoothscaleAppDegraded` fire (their `for:` shortened to seconds), no alert
fires while the app is healthy, and every query of every panel of the dashboard returns data. One
Prometheus and one sandbox for the module; heavy (a sandbox and Prometheus): run it under the heavy lock."""

from __future__ import annotations

import json
import re
import shutil
import socket
import subprocess
import time
import urllib.parse
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest
import yaml
from install_testkit import ROOT, one, render

from smoothscale.sandbox.addresses import random_block
from smoothscale.sandbox.demo import APP, NAMESPACE, demo_app, worker_env
from smoothscale.sandbox.harness import Sandbox
from smoothscale.sandbox.observe import settle

pytestmark = pytest.mark.slow

DASHBOARD = ROOT / "charts" / "smoothscale" / "dashboards" / "smoothscale.json"
SMOOTHSCALE = shutil.which("smoothscale") or "smoothscale"
JOB = "smoothscale-metrics"
"""The operator's job as the chart's ServiceMonitor names it (the metrics Service of release smoothscale)."""
MOVING = re.compile(r"^progress: .*\b([1-9]\d*) warming", re.MULTILINE)
"""`smoothscale status`'s progress line while copies warm up."""
SHORT_FOR = ("scrapeFailures", "appDegraded")
"""The alerts the frozen pod must fire, their `for:` shortened to seconds for the test."""


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


@dataclass
class Prometheus:
    url: str
    started: float

    def get(self, path: str, **params: str) -> Any:
        query = urllib.parse.urlencode(params)
        with urllib.request.urlopen(f"{self.url}{path}?{query}", timeout=10) as response:
            body = json.load(response)
        assert body["status"] == "success", body
        return body["data"]

    def firing(self) -> set[str]:
        return {
            a["labels"]["alertname"] for a in self.get("/api/v1/alerts")["alerts"] if a["state"] == "firing"
        }


@pytest.fixture(scope="module")
def running(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Sandbox, Prometheus]]:
    prometheus_binary = shutil.which("prometheus")
    if prometheus_binary is None:
        pytest.fail("prometheus is missing: install Debian's prometheus package (bash .ci/prometheus.sh)")
    root = tmp_path_factory.mktemp("prometheus")
    shortened = [f"prometheusRule.for.{alert}=5s" for alert in SHORT_FOR]
    rules = one(render(None, "prometheusRule.enabled=true", *shortened), "PrometheusRule")["spec"]
    (root / "rules.yaml").write_text(yaml.safe_dump(rules, sort_keys=False))
    metrics_port, web_port = free_port(), free_port()
    config = {
        "global": {"scrape_interval": "1s", "evaluation_interval": "1s"},
        "rule_files": [str(root / "rules.yaml")],
        "scrape_configs": [{"job_name": JOB, "static_configs": [{"targets": [f"127.0.0.1:{metrics_port}"]}]}],
    }
    (root / "prometheus.yml").write_text(yaml.safe_dump(config))
    with (
        Sandbox(
            root / "sandbox",
            worker_env=worker_env(speed=1.0),
            first_address=random_block(),
            metrics_port=metrics_port,
        ) as sandbox,
        (root / "prometheus.log").open("w") as log,
    ):
        process = subprocess.Popen(
            [
                prometheus_binary,
                f"--config.file={root / 'prometheus.yml'}",
                f"--storage.tsdb.path={root / 'data'}",
                f"--web.listen-address=127.0.0.1:{web_port}",
                "--log.level=warn",
            ],
            stdout=log,
            stderr=subprocess.STDOUT,
        )
        try:
            prometheus = Prometheus(f"http://127.0.0.1:{web_port}", time.time())
            _wait(lambda: _up(prometheus), 30, "Prometheus scraping the operator")
            yield sandbox, prometheus
        finally:
            process.terminate()
            process.wait(timeout=30)


def _up(prometheus: Prometheus) -> bool:
    try:
        result = prometheus.get("/api/v1/query", query=f'up{{job="{JOB}"}}')["result"]
    except OSError:
        return False
    return bool(result) and result[0]["value"][1] == "1"


def _wait(condition: Any, seconds: float, what: str) -> None:
    deadline = time.time() + seconds
    while time.time() < deadline:
        if condition():
            return
        time.sleep(0.5)
    raise AssertionError(f"{what}: not within {seconds:.0f} s")


def test_a_frozen_pod_fires_scrape_failures_and_degraded_and_every_panel_has_data(
    running: tuple[Sandbox, Prometheus],
) -> None:
    sandbox, prometheus = running
    sandbox.apply(demo_app(replicas=3))
    assert settle(sandbox, APP, "create", timeout=120) is not None
    sandbox.patch_app(APP, {"spec": {"replicas": 5}})
    # polled: until the new pods are ready nothing moves, and on a loaded machine active copies can fall
    # behind for a round (a `progress` of restoring actives, gone by the next round) before warmups start
    _wait(
        lambda: MOVING.search(_status_command(sandbox)), 90, "the scale-out's warmups in `smoothscale status`"
    )
    assert settle(sandbox, APP, "scale-out", timeout=120) is not None
    assert prometheus.firing() == set()
    assert sandbox.kubelet is not None
    sandbox.kubelet.freeze(f"{APP}-0", NAMESPACE)
    try:
        _wait(
            lambda: {"SmoothscaleScrapeFailures", "SmoothscaleAppDegraded"} <= prometheus.firing(),
            60,
            "alerts",
        )
    finally:
        sandbox.kubelet.freeze(f"{APP}-0", NAMESPACE, frozen=False)
    assert "SmoothscaleOperatorDown" not in prometheus.firing()
    empty = [query for query in _queries() if not _has_data(prometheus, query)]
    assert empty == []


def _status_command(sandbox: Sandbox) -> str:
    """`smoothscale status orders`, as a person runs it during the scale-out."""
    command = [SMOOTHSCALE, "status", APP, "--kubeconfig", str(sandbox.kubeconfig), "-n", NAMESPACE]
    shown = subprocess.run(command, capture_output=True, text=True, timeout=60, check=False)
    assert shown.returncode == 0, shown.stdout + shown.stderr
    return shown.stdout


def _queries() -> list[str]:
    """Every panel's queries and the template variables' label queries, with the variables set to match all
    (`$__rate_interval`: 10 s, several scrapes at the test's 1 s)."""
    dashboard = json.loads(DASHBOARD.read_text())
    queries = [t["expr"] for p in dashboard["panels"] if p["type"] != "row" for t in p["targets"]]
    queries += [v["query"]["query"] for v in dashboard["templating"]["list"] if v["type"] == "query"]
    variables = {"$__rate_interval": "10s", "$namespace": ".*", "$app": ".*", "$job": ".*"}
    return [re.sub(r"\$\w+", lambda m: variables.get(m[0], m[0]), query) for query in queries]


def _has_data(prometheus: Prometheus, query: str) -> bool:
    """A range query over the test's time returns a number somewhere (`label_values(metric, label)`, a
    variable's query: the label has a value on that metric)."""
    label_values = re.fullmatch(r"label_values\((.+), (\w+)\)", query)
    if label_values is not None:
        values = prometheus.get(f"/api/v1/label/{label_values[2]}/values", **{"match[]": label_values[1]})
        return bool(values)
    data = prometheus.get(
        "/api/v1/query_range", query=query, start=str(prometheus.started), end=str(time.time()), step="1"
    )
    return any(value != "NaN" for series in data["result"] for _, value in series["values"])
