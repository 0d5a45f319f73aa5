"""Faults with real workers: a pod crash with and without its volume, the operator killed mid-migration."""

from __future__ import annotations

import time

import pytest
from sandbox_e2e_kit import CRASH_BOUND, Run

from smoothscale.sandbox import invariants
from smoothscale.sandbox.harness import Sandbox
from smoothscale.sandbox.kubelet import Kubelet
from smoothscale.sandbox.observe import Snapshot

pytestmark = pytest.mark.slow


def _crash(run: Run, kubelet: Kubelet, pod: str, *, lose_volume: bool) -> Snapshot:
    """Kill the pod's worker, and wait until a new one runs and the app has settled again."""
    killed: list[int] = []

    def restarted(_: Snapshot) -> bool:
        current = kubelet.worker_pids().get(f"default/{pod}")
        return current is not None and current not in killed

    return run.step(
        f"crash {pod}",
        CRASH_BOUND,
        lambda: killed.append(kubelet.crash(pod, lose_volume=lose_volume)),
        also=restarted,
    )


def test_a_crashed_pod_restores_from_its_volume_and_one_without_it_rebuilds(sandbox: Sandbox) -> None:
    assert sandbox.kubelet is not None
    run = Run(sandbox)
    run.start(replicas=3)
    time.sleep(2)  # let the workers checkpoint their state on the volumes

    since = time.time()
    _crash(run, sandbox.kubelet, "orders-0", lose_volume=False)
    run.violations += invariants.rebuilt_state(sandbox.records(), "orders-0", since)

    since = time.time()
    last = _crash(run, sandbox.kubelet, "orders-1", lose_volume=True)
    restarts = [r for r in sandbox.records() if r["kind"] == "started" and r["pod"] == "orders-1"]
    assert restarts[-1]["at"] >= since and restarts[-1]["tasks"] == {}  # an empty volume: rebuilt
    run.finish(last)


def test_an_operator_killed_mid_migration_resumes_and_finishes_it(sandbox: Sandbox) -> None:
    Run(sandbox).operator_killed_mid_migration()
