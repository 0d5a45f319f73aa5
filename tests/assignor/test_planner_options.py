"""Planner options from the seeds: balanceFactor (the drafts' stream.balancing.factor, KIP-441's
balance_factor discussion) and catchUpTrigger (the drafts' learn.partial.rebalance)."""

from __future__ import annotations

import json

import pytest
from hypothesis import HealthCheck, given, settings
from pydantic import ValidationError
from rules import assert_valid, make_client, make_snapshot, make_task, run_planner
from strategies import Perturbation, clusters, perturbations
from test_convergence import perturb_and_converge

from smoothscale.assignor.models import Snapshot


def with_config(snapshot: Snapshot, **config: object) -> Snapshot:
    data = json.loads(snapshot.model_dump_json(by_alias=True))
    data["config"].update(config)
    return Snapshot.model_validate(data)


def test_default_keeps_strict_balance() -> None:
    snapshot = make_snapshot([make_task(f"0_{p}") for p in range(6)], [make_client("a"), make_client("b")])
    assert snapshot.config.balance_factor == 1
    assert snapshot.config.catch_up_trigger == "eager"


def test_imbalance_within_the_tolerance_is_left_alone() -> None:
    """Loads 4, 3, 2 differ by 2: with balanceFactor 2 nothing moves; with 1 the planner rebalances."""
    tasks = [make_task(f"0_{p}") for p in range(9)]
    lags = {f"0_{p}": 0 for p in range(9)}
    clients = [
        make_client("a", active=[f"0_{p}" for p in range(4)], lags=lags),
        make_client("b", active=[f"0_{p}" for p in range(4, 7)], lags=lags),
        make_client("c", active=["0_7", "0_8"], lags=lags),
    ]
    strict = make_snapshot(tasks, clients, strategy="none")
    tolerant = with_config(strict, balanceFactor=2)
    plan = run_planner(tolerant)
    assert_valid(tolerant, plan)
    assert plan.stable and plan.stats.moved_actives == 0
    strict_plan = run_planner(strict)
    assert sorted(len(t.active) for t in strict_plan.target.values()) == [3, 3, 3]


def test_tolerance_saves_moves_when_a_pod_joins() -> None:
    """Ten pods of 10 tasks each, one pod joins: the strict target moves ~9 tasks, the tolerant one fewer."""
    tasks = [make_task(f"0_{p}", offsets=0) for p in range(100)]
    clients = [make_client(f"p{i}", active=[f"0_{p}" for p in range(10 * i, 10 * i + 10)]) for i in range(10)]
    clients.append(make_client("p10"))
    strict = make_snapshot(tasks, clients, strategy="none")

    def moves(snapshot: Snapshot) -> int:
        plan = run_planner(snapshot)
        assert_valid(snapshot, plan)
        return 100 - sum(len(set(plan.target[c.id].active) & set(c.active)) for c in snapshot.clients)

    assert moves(strict) == 9
    assert moves(with_config(strict, balanceFactor=2)) < 9
    assert moves(with_config(strict, balanceFactor=3)) <= moves(with_config(strict, balanceFactor=2))


@pytest.mark.parametrize(("field", "value"), [("balanceFactor", 0), ("catchUpTrigger", "lazy")])
def test_bad_options_are_refused_naming_the_field(field: str, value: object) -> None:
    snapshot = make_snapshot([make_task("0_0")], [make_client("a")])
    with pytest.raises(ValidationError, match=field):
        with_config(snapshot, **{field: value})


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(cluster=clusters(max_subtopologies=3, max_partitions=8, max_clients=6), ops=perturbations(max_size=3))
def test_convergence_with_a_balance_factor(cluster: Snapshot, ops: list[Perturbation]) -> None:
    """The convergence test of rule 8, with balanceFactor 2: valid plans, bounded rounds, a fixed point, and a
    target within the tolerance."""
    perturb_and_converge(with_config(cluster, balanceFactor=2), ops)


@pytest.mark.parametrize("option", [{"balanceFactor": 2}, {"balanceBy": "weight"}])
@given(cluster=clusters(max_subtopologies=3, max_partitions=8, max_clients=6))
@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
def test_plans_with_options_ignore_input_order(option: dict[str, object], cluster: Snapshot) -> None:
    snapshot = with_config(cluster, **option)
    data = json.loads(snapshot.model_dump_json(by_alias=True))
    data["tasks"].reverse()
    data["clients"].reverse()
    for client in data["clients"]:
        client["active"].reverse()
        client["lags"] = dict(reversed(list(client["lags"].items())))
    shuffled = Snapshot.model_validate(data)
    assert run_planner(snapshot).model_dump_json() == run_planner(shuffled).model_dump_json()


def heavy_and_light() -> Snapshot:
    """One subtopology ten times heavier than the other, all on one pod of three."""
    tasks = [make_task(f"0_{p}", offsets=0) for p in range(3)] + [
        make_task(f"1_{p}", offsets=0) for p in range(9)
    ]
    data = json.loads(
        make_snapshot(
            tasks, [make_client("a"), make_client("b"), make_client("c")], strategy="none"
        ).model_dump_json(by_alias=True)
    )
    for task in data["tasks"]:
        task["weight"] = 10.0 if task["subtopology"] == "0" else 1.0
    return Snapshot.model_validate(data)


def peak_weight(snapshot: Snapshot, by: str) -> float:
    snapshot = with_config(snapshot, balanceBy=by)
    plan = run_planner(snapshot)
    assert_valid(snapshot, plan)
    weight = {t.id: t.weight for t in snapshot.tasks}
    return max(sum(weight[t] for t in target.active) for target in plan.target.values())


def test_weight_balance_spreads_the_heavy_subtopology() -> None:
    """39 units of weight on 3 pods: balanced by weight no pod carries more than 13 + the heaviest task."""
    snapshot = heavy_and_light()
    assert peak_weight(snapshot, "weight") <= 13 + 10
    assert peak_weight(snapshot, "weight") <= peak_weight(snapshot, "count")


def test_weight_balance_beats_count_balance_when_weights_are_skewed() -> None:
    """Two heavy tasks and many light ones: counting tasks without subtopology balance (min_traffic, no
    inputs) keeps both heavy ones beside a full share of light ones; weighing them does not."""
    tasks = [make_task(f"0_{p}", offsets=0) for p in range(2)] + [
        make_task(f"1_{p}", offsets=0) for p in range(10)
    ]
    data = json.loads(
        make_snapshot(tasks, [make_client("a"), make_client("b")], strategy="min_traffic").model_dump_json(
            by_alias=True
        )
    )
    data["clients"][0]["active"] = ["0_0", "0_1", *[f"1_{p}" for p in range(4)]]
    data["clients"][1]["active"] = [f"1_{p}" for p in range(4, 10)]
    for task in data["tasks"]:
        task["weight"] = 10.0 if task["subtopology"] == "0" else 1.0
    snapshot = Snapshot.model_validate(data)
    assert peak_weight(snapshot, "count") == 24
    assert peak_weight(snapshot, "weight") <= 15


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(cluster=clusters(max_subtopologies=3, max_partitions=8, max_clients=6), ops=perturbations(max_size=2))
def test_convergence_balancing_weight(cluster: Snapshot, ops: list[Perturbation]) -> None:
    """Convergence with balanceBy=weight and subtopology weights 1, 3, 7."""
    data = json.loads(with_config(cluster, balanceBy="weight").model_dump_json(by_alias=True))
    for task in data["tasks"]:
        task["weight"] = (1.0, 3.0, 7.0)[int(task["subtopology"]) % 3]
    perturb_and_converge(Snapshot.model_validate(data), ops)
