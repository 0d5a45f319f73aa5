"""The operator's settings are declared once (`OperatorConfig`): the options of `smoothscale operator` and the
`SMOOTHSCALE_*` variables of `kopf run -m smoothscale.operator.entry` come from that declaration and agree."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from smoothscale.cli.main import cli
from smoothscale.operator import main as operator_main
from smoothscale.operator.config import OperatorConfig, env_var


@pytest.fixture()
def started(monkeypatch: pytest.MonkeyPatch) -> list[OperatorConfig]:
    """The settings `smoothscale operator` would start the operator with (kopf is not started)."""
    seen: list[OperatorConfig] = []

    def run(config: OperatorConfig, **_: Any) -> None:
        seen.append(config)

    monkeypatch.setattr(operator_main, "run", run)
    return seen


def test_every_setting_is_an_option_with_its_variable_and_default() -> None:
    help_text = CliRunner().invoke(cli, ["operator", "--help"], terminal_width=200).output
    for name in OperatorConfig.model_fields:
        flag = {"kube_context": "--context", "namespaces": "--namespace"}.get(
            name, "--" + name.replace("_", "-")
        )
        assert flag in help_text, name
    assert "[default: 5.0]" in help_text  # the scrape interval's default, from the model


def test_options_and_variables_give_the_same_settings(started: list[OperatorConfig], tmp_path: Path) -> None:
    kubeconfig = tmp_path / "kubeconfig"
    kubeconfig.write_text("{}")
    given = {
        "kubeconfig": str(kubeconfig),
        "namespaces": "streams,batch",
        "standalone": "true",
        "scrape_interval": "2.5",
        "metrics_port": "off",
        "journal_stdout": "false",
        "priority": "7",
    }
    env = {env_var(name): value for name, value in given.items()}
    result = CliRunner().invoke(cli, ["operator"], env=env)
    assert result.exit_code == 0, result.output
    assert started == [OperatorConfig.from_env(env)]
    config = started[0]
    assert (config.kubeconfig, config.namespaces, config.standalone) == (
        kubeconfig,
        ("streams", "batch"),
        True,
    )
    assert (config.scrape_interval, config.metrics_port, config.journal_stdout) == (2.5, None, False)
    args = ["--kubeconfig", str(kubeconfig), "-n", "streams", "-n", "batch", "--standalone"]
    args += ["--scrape-interval", "2.5", "--metrics-port", "off", "--no-journal-stdout", "--priority", "7"]
    assert CliRunner().invoke(cli, ["operator", *args]).exit_code == 0
    assert started[1] == config
    assert OperatorConfig.from_env({}) == OperatorConfig()


def test_a_bad_value_names_the_option_or_the_variable_and_what_it_expects(
    started: list[OperatorConfig],
) -> None:
    result = CliRunner().invoke(cli, ["operator", "--scrape-interval", "0.01"])
    assert result.exit_code == 2 and "--scrape-interval=0.01" in result.output
    assert "greater than or equal to 0.05" in result.output
    with pytest.raises(ValueError, match=r"SMOOTHSCALE_METRICS_PORT='http'.*valid integer"):
        OperatorConfig.from_env({"SMOOTHSCALE_METRICS_PORT": "http"})
    assert started == []
