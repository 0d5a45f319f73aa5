"""Scaling out and in, a host swap and a manual drain, with real workers: no task on two pods at once, every
task processed again within a bound, a balanced end."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from sandbox_e2e_kit import PLANNED_MOVE_BOUND, Run

from smoothscale.contract import shared_names as contract
from smoothscale.sandbox.demo import APP
from smoothscale.sandbox.harness import Sandbox

pytestmark = pytest.mark.slow


def _scale(sandbox: Sandbox, replicas: int) -> Callable[[], None]:
    return lambda: sandbox.patch_app(APP, {"spec": {"replicas": replicas}})


def test_scale_out_then_in(sandbox: Sandbox) -> None:
    run = Run(sandbox)
    run.start(replicas=3)
    out = run.step("scale-out", PLANNED_MOVE_BOUND, _scale(sandbox, 6))
    assert len(out.pods) == 6
    back = run.step("scale-in", PLANNED_MOVE_BOUND, _scale(sandbox, 3))
    assert {pod.name for pod in back.pods} == {"orders-0", "orders-1", "orders-2"}
    assert {pod.zone for pod in back.pods} == set(sandbox.zones)
    run.finish(back)


def test_host_swap_replaces_every_pod(sandbox: Sandbox) -> None:
    run = Run(sandbox)
    before = {pod.revision for pod in run.start(replicas=3).pods}
    template = {"spec": {"containers": [{"name": "app", "image": "example/orders:2"}]}}
    swapped = run.step(
        "swap", PLANNED_MOVE_BOUND, lambda: sandbox.patch_app(APP, {"spec": {"template": template}})
    )
    assert before.isdisjoint(pod.revision for pod in swapped.pods)
    run.finish(swapped)


def test_manual_drain_moves_the_tasks_then_replaces_the_pod(sandbox: Sandbox) -> None:
    run = Run(sandbox)
    run.start(replicas=3)
    drained = run.step(
        "drain",
        PLANNED_MOVE_BOUND,
        lambda: sandbox.annotate("orders-1", {contract.LEAVING_ANNOTATION: "true"}),
        also=lambda snapshot: "orders-1" not in {pod.name for pod in snapshot.pods},
    )
    assert len(drained.pods) == 3
    assert any(r["kind"] == "leaving" and r["pod"] == "orders-1" for r in sandbox.records())
    run.finish(drained)
