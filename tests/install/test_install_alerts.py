"""The chart's monitoring: its PrometheusRule checked and unit-tested with promtool (`alert_rules_test.yaml`:
series that must and must not fire each alert), every alert explained in docs/alerts.md, and its Grafana
dashboard's ConfigMap, whose queries read only what the operator exports. A real Prometheus runs both against
the demo in tests/install/test_install_prometheus.py."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml
from install_testkit import ROOT, Json, one, render

from smoothscale.operator.metrics import OperatorMetrics

RULE_TESTS = Path(__file__).with_name("alert_rules_test.yaml")
DASHBOARD = ROOT / "charts" / "smoothscale" / "dashboards" / "smoothscale.json"


def promtool() -> str:
    found = shutil.which("promtool")
    if found is None:
        pytest.fail("promtool is missing: install Debian's prometheus package (bash .ci/prometheus.sh)")
    return found


@pytest.fixture(scope="module")
def rules(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The rendered PrometheusRule's groups as a Prometheus rules file, with the unit tests beside it."""
    spec = one(render(None, "prometheusRule.enabled=true"), "PrometheusRule")["spec"]
    folder = tmp_path_factory.mktemp("rules")
    (folder / "rules.yaml").write_text(yaml.safe_dump(spec, sort_keys=False))
    shutil.copy(RULE_TESTS, folder / RULE_TESTS.name)
    return folder / "rules.yaml"


def alerts(rules: Path) -> list[Json]:
    return [rule for group in yaml.safe_load(rules.read_text())["groups"] for rule in group["rules"]]


def test_promtool_accepts_the_rules(rules: Path) -> None:
    command = [promtool(), "check", "rules", str(rules)]
    checked = subprocess.run(command, capture_output=True, text=True, check=False)
    assert checked.returncode == 0, checked.stdout + checked.stderr
    assert f"SUCCESS: {len(alerts(rules))} rules found" in checked.stdout


def test_each_alert_fires_on_its_series_and_not_on_the_others(rules: Path) -> None:
    tested = subprocess.run(
        [promtool(), "test", "rules", RULE_TESTS.name],
        capture_output=True,
        text=True,
        cwd=rules.parent,
        check=False,
    )
    assert tested.returncode == 0, tested.stdout + tested.stderr
    cases = yaml.safe_load(RULE_TESTS.read_text())["tests"]
    covered = {test["alertname"] for case in cases for test in case["alert_rule_test"] if test["exp_alerts"]}
    assert covered == {rule["alert"] for rule in alerts(rules)}


def test_every_alert_has_a_summary_and_a_runbook(rules: Path) -> None:
    runbooks = (ROOT / "docs" / "alerts.md").read_text()
    for rule in alerts(rules):
        assert rule["annotations"]["summary"] and rule["annotations"]["description"], rule["alert"]
        assert f"### {rule['alert']}\n" in runbooks, rule["alert"]
        assert rule["labels"]["severity"] in {"warning", "critical"}
    linked = one(
        render(None, "prometheusRule.enabled=true", "prometheusRule.runbookBase=https://x/a.md"),
        "PrometheusRule",
    )
    urls = [
        rule["annotations"]["runbook_url"] for group in linked["spec"]["groups"] for rule in group["rules"]
    ]
    assert urls[0] == "https://x/a.md#smoothscalemigrationpasteta"


def test_the_dashboard_ships_in_a_configmap_for_grafanas_sidecar() -> None:
    documents = render(None, "grafanaDashboard.enabled=true")
    configmap = next(
        d for d in documents if d["kind"] == "ConfigMap" and d["metadata"]["name"].endswith("-dashboard")
    )
    assert configmap["metadata"]["labels"]["grafana_dashboard"] == "1"
    assert json.loads(configmap["data"]["smoothscale.json"]) == json.loads(DASHBOARD.read_text())
    assert (ROOT / "examples" / "grafana-dashboard.json").resolve() == DASHBOARD.resolve()
    assert not [
        d for d in render() if d["kind"] == "ConfigMap" and d["metadata"]["name"].endswith("-dashboard")
    ]


def dashboard_queries() -> list[str]:
    panels = json.loads(DASHBOARD.read_text())["panels"]
    return [target["expr"] for panel in panels if panel["type"] != "row" for target in panel["targets"]]


def test_the_dashboards_queries_read_what_the_operator_exports() -> None:
    exported = {
        sample.name
        for family in OperatorMetrics().registry.collect()
        for sample in [*family.samples, type("S", (), {"name": family.name})()]
    }
    exported |= {f"{name}_total" for name in exported} | {f"{name}_bucket" for name in exported}
    used = {
        name
        for query in dashboard_queries()
        for name in re.findall(r"\b(?:smoothscale_operator|process)_\w+", query)
    }
    assert used and used <= exported, used - exported
    panels = [panel for panel in json.loads(DASHBOARD.read_text())["panels"] if panel["type"] != "row"]
    assert all(panel["targets"] for panel in panels)
