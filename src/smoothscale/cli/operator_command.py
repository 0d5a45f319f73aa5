"""`smoothscale operator`: run the operator (kopf) until SIGTERM or SIGINT.

Its options are derived from the operator's settings (`smoothscale.operator.config.OperatorConfig`): one per
setting, with the setting's default and help, reading the setting's `SMOOTHSCALE_*` environment variable
(the ones `kopf run -m smoothscale.operator.entry` reads), and checked by the model, so that a setting is
declared once. Logs go to standard error (plain or JSON); the event journal goes to standard output, and
optionally to a file.
"""

from __future__ import annotations

import typing
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import click
from pydantic import ValidationError
from pydantic.fields import FieldInfo

from smoothscale.operator.config import OperatorConfig, env_var

F = TypeVar("F", bound=Callable[..., Any])

FLAGS: dict[str, tuple[str, ...]] = {"kube_context": ("--context",), "namespaces": ("--namespace", "-n")}
"""Options spelt otherwise than `--<setting-name>`, as kubectl spells them."""


def _option(name: str, field: FieldInfo) -> Callable[[F], F]:
    flags = FLAGS.get(name, ("--" + name.replace("_", "-"),))
    common: dict[str, Any] = {"envvar": env_var(name), "help": field.description}
    kind = field.annotation
    if kind is bool:
        if field.default:
            flags = (f"{flags[0]}/--no-{flags[0][2:]}",)
            return click.option(*flags, name, default=True, show_default=True, **common)
        return click.option(*flags, name, is_flag=True, **common)
    if typing.get_origin(kind) is tuple:
        return click.option(*flags, name, multiple=True, **common)
    base = _base(kind)
    if base is Path:
        common["type"] = click.Path(dir_okay=False, path_type=Path)
    elif base is float:
        common["type"] = click.FLOAT
    elif base is int:
        common.update(type=click.STRING, metavar="INTEGER")  # the model converts and checks it ("off" too)
    show = field.default is not None and field.default != ()
    return click.option(*flags, name, default=field.default, show_default=show, **common)


def _base(kind: Any) -> Any:
    """The type under `X | None` and `Annotated[X, ...]` (pydantic's FilePath is an annotated Path)."""
    options = [k for k in typing.get_args(kind) if k is not type(None)] if typing.get_origin(kind) else [kind]
    if len(options) == 1 and typing.get_origin(options[0]) is typing.Annotated:
        return typing.get_args(options[0])[0]
    return options[0] if len(options) == 1 else kind


def settings_options(command: F) -> F:
    """One option per operator setting, in the order they are declared."""
    for name, field in reversed(OperatorConfig.model_fields.items()):
        command = _option(name, field)(command)
    return command


@click.command("operator")
@settings_options
@click.option(
    "--liveness",
    envvar=env_var("liveness"),
    help="kopf's liveness endpoint, e.g. http://0.0.0.0:8081/healthz.",
)
@click.option("--log-json", is_flag=True, envvar=env_var("log_json"), help="Log JSON lines.")
@click.option("--verbose", "-v", is_flag=True, help="Debug logging.")
def operator_command(liveness: str | None, log_json: bool, verbose: bool, **settings: Any) -> None:
    """Run the smoothscale operator: watch StreamsApps and run their pods without rebalance downtime."""
    try:
        config = OperatorConfig.model_validate(settings)
    except ValidationError as error:
        problems = "; ".join(
            f"--{str(e['loc'][0]).replace('_', '-')}={settings.get(str(e['loc'][0]))!r}: {e['msg']}"
            for e in error.errors()
        )
        raise click.UsageError(problems) from None
    # Imported here: kopf and the operator load only when this sub-command runs.
    import kopf  # noqa: PLC0415

    from smoothscale.operator.main import run  # noqa: PLC0415

    kopf.configure(verbose=verbose, log_format=kopf.LogFormat.JSON if log_json else kopf.LogFormat.FULL)
    run(config, liveness_endpoint=liveness)
