"""Convergence under random perturbations, in the spirit of Kafka's TaskAssignorConvergenceTest.

A random cluster (`strategies.clusters`) is planned until stable; then pods are added, removed, marked
leaving (with the scale-down timeout running or already expired) and lags change, and after each
perturbation the operator re-plans, publishing every plan with its warmups caught up (`rules.advance`).

Every plan must pass every rule (`rules.check_plan`); the sequence must reach a stable plan within

    B = ceil(T * (1 + numStandbys) / maxWarmupReplicas) + 3 rounds

(T tasks; the first plan after a perturbation is round 1). Why this bound: at most T * (1 + numStandbys)
copies (actives and standbys) can need a new home, each needs at most one warmup, at most
maxWarmupReplicas warmups run per round, and a caught-up warmup is promoted in the very next round; the
+3 covers the first plan, the promotion of the last warmups, and the plan that finds nothing left to do.
A planner whose target wanders between rounds, or that wastes its warmup budget, exceeds it.

The stable plan must be balanced (R9) and a fixed point: fed back, it is returned unchanged (rule 8).
"""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from rules import (
    advance,
    assert_fixed_point,
    balance_violations,
    convergence_bound,
    dump,
    run_planner,
    run_until_stable,
)
from strategies import Perturbation, apply_perturbation, clusters, perturbations

from smoothscale.assignor.models import Plan, Snapshot


def converge(snapshot: Snapshot, plan: Plan) -> tuple[Snapshot, Plan]:
    """Re-plan until stable within the bound; check balance and the fixed point; return the stable round."""
    bound = convergence_bound(snapshot)
    stable_snapshot, stable_plan = run_until_stable(snapshot, bound, first=plan)[-1]
    assert balance_violations(stable_snapshot, stable_plan) == [], dump(stable_snapshot)
    assert_fixed_point(stable_snapshot, stable_plan)
    return stable_snapshot, stable_plan


def perturb_and_converge(cluster: Snapshot, ops: list[Perturbation]) -> None:
    snapshot = cluster
    snapshot, plan = converge(snapshot, run_planner(snapshot))
    for serial, op in enumerate(ops):
        snapshot = apply_perturbation(advance(snapshot, plan), op, serial)
        snapshot, plan = converge(snapshot, run_planner(snapshot))


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    cluster=clusters(max_subtopologies=3, max_partitions=6, max_clients=6),
    ops=perturbations(max_size=3),
)
def test_small_clusters_converge_after_perturbations(cluster: Snapshot, ops: list[Perturbation]) -> None:
    """Small clusters, where ties, empty pods and single-pod corner cases are frequent."""
    perturb_and_converge(cluster, ops)


@pytest.mark.slow
@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(cluster=clusters(), ops=perturbations(max_size=4))
def test_clusters_converge_after_perturbations(cluster: Snapshot, ops: list[Perturbation]) -> None:
    """The full range: 1..4 subtopologies of 1..12 partitions, 1..10 pods over 1..3 racks."""
    perturb_and_converge(cluster, ops)
