"""The operator's own settings (not an app's: those are in each StreamsApp's spec).

The same settings reach the operator two ways: as options of `smoothscale operator`, and, for `kopf run -m
smoothscale.operator.entry`, as `SMOOTHSCALE_*` environment variables (the options read the same
variables, so a Deployment can use either).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any, Final

ENV_PREFIX: Final = "SMOOTHSCALE_"


@dataclass(frozen=True)
class OperatorConfig:
    kubeconfig: Path | None = None
    """Read credentials from this kubeconfig file; None: in-cluster or the default kubeconfig."""
    kube_context: str | None = None
    scrape_interval: float = 5.0
    """Seconds between scrapes of an app's pods (and between reconciliations of an app)."""
    scrape_timeout: float = 2.0
    debounce: float = 0.2
    """Seconds to gather a burst of changes (pods created together, several annotations) into one round."""
    startup_grace: float = 30.0
    """Seconds an app's first plan may wait for all its new pods to report metrics."""
    assignment_recheck: float = 60.0
    """Seconds between re-reads of an app's assignment ConfigMap (to notice that someone deleted it)."""
    api_timeout: float = 30.0
    metrics_host: str = "0.0.0.0"
    metrics_port: int | None = 8080
    """Port of the operator's own /metrics; None serves none, 0 picks a free port."""
    journal_stdout: bool = True
    journal_file: Path | None = None
    peering: str = "smoothscale"
    standalone: bool = False
    """Run without peering (a single replica, or tests); otherwise peering is mandatory."""
    priority: int | None = None
    """Peering priority; None draws a random one, so that exactly one of several replicas acts (kopf
    pauses every operator that sees a peer of equal priority)."""
    namespaces: tuple[str, ...] = field(default_factory=tuple)
    """Namespaces to serve; empty serves all of them."""

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> OperatorConfig:
        """Settings from `SMOOTHSCALE_<FIELD>` variables (e.g. SMOOTHSCALE_SCRAPE_INTERVAL=2)."""
        env = os.environ if env is None else env
        values: dict[str, Any] = {}
        for item in fields(cls):
            raw = env.get(ENV_PREFIX + item.name.upper())
            if raw is not None and raw != "":
                values[item.name] = _convert(item.name, raw, getattr(cls(), item.name))
        return cls(**values)


def _convert(name: str, raw: str, default: object) -> object:
    if name in ("kubeconfig", "journal_file"):
        return Path(raw)
    if name == "namespaces":
        return tuple(n.strip() for n in raw.split(",") if n.strip())
    if name == "metrics_port":
        return None if raw.lower() in ("none", "off", "") else int(raw)
    if isinstance(default, bool):
        return raw.strip().lower() in ("1", "true", "yes", "on")
    if isinstance(default, float):
        return float(raw)
    if name == "priority":
        return int(raw)
    return raw
