"""The operator's own settings (not an app's: those are in each StreamsApp's spec), declared once.

`OperatorConfig` is the one declaration: each field's type, default, bounds and help. From it come the
`SMOOTHSCALE_<FIELD>` environment variables (`from_env`, for `kopf run -m smoothscale.operator.entry`) and
the options of `smoothscale operator` (`cli.operator_command`, whose options read the same variables, so a
Deployment can configure either entry the same way). A bad value fails with the setting's name and what it
expects, from either side.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Annotated, Any, Final

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, FilePath, ValidationError

from smoothscale.control.step import SCRAPE_INTERVAL_SECONDS, STARTUP_GRACE_SECONDS

ENV_PREFIX: Final = "SMOOTHSCALE_"


def env_var(setting: str) -> str:
    """The environment variable of a setting: `SMOOTHSCALE_` and its name in capitals."""
    return ENV_PREFIX + setting.upper()


def _namespaces(value: object) -> object:
    """Comma-separated lists (from the environment), or a sequence of them (from the options or code)."""
    items = [value] if isinstance(value, str) else value
    if isinstance(items, list | tuple):
        return tuple(n.strip() for item in items for n in str(item).split(",") if n.strip())
    return value


def _optional_port(value: object) -> object:
    if isinstance(value, str) and value.strip().lower() in ("none", "off", ""):
        return None
    return value


class OperatorConfig(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    kubeconfig: FilePath | None = Field(
        None,
        description="Credentials from this kubeconfig; default: in-cluster, then $KUBECONFIG or "
        "~/.kube/config.",
    )
    kube_context: str | None = Field(None, description="Kubeconfig context.")
    namespaces: Annotated[tuple[str, ...], BeforeValidator(_namespaces)] = Field(
        (), description="Serve only these namespaces; default: all namespaces."
    )
    standalone: bool = Field(
        False,
        description="No peering: for a single replica. Otherwise peering is mandatory and one replica acts.",
    )
    peering: str = Field("smoothscale", description="Name of the kopf peering object the replicas share.")
    priority: int | None = Field(
        None,
        description="Peering priority; default: random, so that exactly one of several replicas acts (kopf "
        "pauses every operator that sees a peer of equal priority).",
    )
    scrape_interval: float = Field(
        SCRAPE_INTERVAL_SECONDS,
        ge=0.05,
        description="Seconds between scrapes (and reconciliations) of an app.",
    )
    steady_scrape_interval: float = Field(
        15.0,
        ge=0.05,
        description="Seconds between scrapes of a pod no decision waits on: every pod of an app at rest, "
        "and the pods a migration leaves alone (the ones restoring, taking over, handing over, starting or "
        "leaving are scraped every round); a new spec or a pod gone or no longer ready has the next round "
        "scrape every pod, a pod come or changed is scraped at once. At most `scrape_interval` makes every "
        "round scrape every pod.",
    )
    scrape_timeout: float = Field(2.0, ge=0.01, description="Seconds to wait for one pod's metrics.")
    handover_poll: float = Field(
        0.1,
        ge=0.01,
        description="Seconds between polls of the pods a pending hand-over waits on (only those, only while "
        "it is pending, slower the longer it waits): a moved task starts on its new pod about this soon "
        "after its old pod acknowledged, instead of at the next scrape.",
    )
    debounce: float = Field(
        0.2, ge=0.0, description="Seconds to gather a burst of changes into one reconciliation."
    )
    startup_grace: float = Field(
        STARTUP_GRACE_SECONDS,
        ge=0.0,
        description="Seconds a new app's first plan, or a scale-out's, may wait for all its new pods to "
        "report metrics (they then share the tasks in one migration).",
    )
    assignment_recheck: float = Field(
        60.0,
        ge=0.1,
        description="Seconds between re-reads of each assignment ConfigMap (a deleted one is rebuilt "
        "behind a barrier).",
    )
    pods_recheck: float = Field(
        30.0,
        ge=0.1,
        description="Seconds an app's pods as last listed may be reused while no watch event about them "
        "arrives (and the operator changed none of them); then they are listed again.",
    )
    api_timeout: float = Field(30.0, gt=0.0, description="Seconds to wait for one request to the API server.")
    metrics_host: str = Field("0.0.0.0", description="Address the operator's /metrics listens on.")
    metrics_port: Annotated[int | None, BeforeValidator(_optional_port)] = Field(
        8080,
        ge=0,
        le=65535,
        description="Port of the operator's /metrics (0: a free port; none or off: no /metrics).",
    )
    journal_stdout: bool = Field(True, description="Write the JSON event journal to standard output.")
    journal_file: Path | None = Field(None, description="Also append the JSON event journal to this file.")

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> OperatorConfig:
        """Settings from `SMOOTHSCALE_<FIELD>` variables (e.g. SMOOTHSCALE_SCRAPE_INTERVAL=2); unset or empty
        variables keep the default."""
        env = os.environ if env is None else env
        values: dict[str, Any] = {}
        for name in cls.model_fields:
            raw = env.get(env_var(name))
            if raw is not None and raw != "":
                values[name] = raw
        try:
            return cls.model_validate(values)
        except ValidationError as error:
            problems = "; ".join(
                f"{env_var(str(e['loc'][0]))}={values.get(str(e['loc'][0]))!r}: {e['msg']}"
                for e in error.errors()
            )
            raise ValueError(f"invalid operator settings: {problems}") from None
