"""What the control step's tests build by hand: a listed pod and one round's observation (`control.step`)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime

from smoothscale.contract.publication import Publication
from smoothscale.control import step as control_step
from smoothscale.control.observed import ScrapeResult
from smoothscale.control.pods import PodInfo
from smoothscale.resource import StreamsAppSpec


def listed_pod(app: str, ordinal: int, revision: str, *, ready: bool = True, node: str = "node-a") -> PodInfo:
    """`<app>-<ordinal>`, running on `node` with the template `revision`, not leaving."""
    return PodInfo(
        f"{app}-{ordinal}",
        f"uid-{ordinal}",
        app,
        ordinal,
        revision,
        None,
        None,
        node,
        "10.0.0.1",
        None,
        "Running",
        ready,
        False,
    )


def observation(
    app: str,
    spec: StreamsAppSpec,
    revision: str,
    now: datetime,
    pods: Sequence[PodInfo],
    results: Mapping[str, ScrapeResult],
    published: Publication,
    renewals: Mapping[str, str] | None = None,
) -> control_step.Observation:
    """A round that saw `pods` with their scrape `results` and `published` as the last publication."""
    return control_step.Observation(
        now=now,
        app=app,
        spec=spec,
        problems=None,
        spec_generation=1,
        status_generation=published.generation,
        previous_status=None,
        pods=pods,
        zones={},
        results=results,
        published=published,
        revision=revision,
        renewals=renewals,
    )
