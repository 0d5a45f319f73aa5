"""The aggregated placement graph against the exact one, on problems small enough to solve both ways.

The aggregated graph (pods of a rack behind one hub) is what the planner uses past 200,000 task x pod
pairs. Whatever it returns must be a placement the exact graph could return: copies of an item on distinct
clients, never on the client an entry excludes, every count bound held; and it must find a placement
whenever the exact graph does. When the flow's counts cannot be handed out on distinct clients it says so,
and the rack is solved densely.
"""

from __future__ import annotations

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from smoothscale.assignor.flow.aggregated import Undecomposed, solve_aggregated
from smoothscale.assignor.flow.dense import solve_dense
from smoothscale.assignor.flow.problem import NO_EXCLUSION, Bounds, PlacementProblem
from smoothscale.assignor.flow.solve import place


def _array(values: list[int]) -> np.ndarray:
    return np.array(values, dtype=np.int64)


def _aggregated_with_fallback(problem: PlacementProblem, bounds: Bounds) -> list[list[int]] | None:
    dense: frozenset[int] = frozenset()
    while True:
        result = solve_aggregated(problem, bounds, dense)
        if not isinstance(result, Undecomposed):
            return result
        assert not result.racks <= dense
        dense |= result.racks


def _violations(problem: PlacementProblem, bounds: Bounds, placed: list[list[int]]) -> list[str]:
    problems = []
    reachable: dict[int, set[int]] = {i: set() for i in range(problem.n_items)}
    for item, rack, excluded in zip(
        problem.entry_item.tolist(), problem.entry_rack.tolist(), problem.entry_exclude.tolist(), strict=True
    ):
        reachable[item] |= {
            c for c in range(problem.n_clients) if problem.client_rack[c] == rack and c != excluded
        }
    for item, client in zip(problem.direct_item.tolist(), problem.direct_client.tolist(), strict=True):
        reachable[item].add(client)
    for item, clients in enumerate(placed):
        if len(clients) != problem.supply[item] or len(set(clients)) != len(clients):
            problems.append(f"item {item} placed on {clients}, needs {problem.supply[item]} distinct clients")
        if not set(clients) <= reachable[item]:
            problems.append(f"item {item} placed on {clients}, outside its arcs {sorted(reachable[item])}")
    counts = np.bincount([c for cs in placed for c in cs], minlength=problem.n_clients)
    for client, count in enumerate(counts.tolist()):
        if not bounds.client_lower[client] <= count <= bounds.client_upper[client]:
            problems.append(
                f"client {client} holds {count}, bounds [{bounds.client_lower[client]}, "
                f"{bounds.client_upper[client]}]"
            )
    return problems


def test_counts_without_a_decomposition_are_solved_densely() -> None:
    """Rack 0 = clients 0 and 1 (client 1 may take nothing), rack 1 = client 2. Item 0 has two copies,
    item 1 one; entering rack 0 is free, rack 1 costs 5. The aggregated flow sends all three copies into
    rack 0 to client 0, which no placement on distinct clients can honour: the rack is re-solved densely and
    item 0 pays for one copy in rack 1."""
    problem = PlacementProblem(
        client_rack=_array([0, 0, 1]),
        n_racks=2,
        supply=_array([2, 1]),
        item_group=_array([0, 0]),
        n_groups=1,
        entry_item=_array([0, 0, 1, 1]),
        entry_rack=_array([0, 1, 0, 1]),
        entry_exclude=_array([NO_EXCLUSION] * 4),
        entry_capacity=_array([2, 1, 1, 1]),
        entry_cost=_array([0, 5, 0, 5]),
        direct_item=_array([]),
        direct_client=_array([]),
        direct_cost=_array([]),
    )
    bounds = Bounds(_array([0, 0, 0]), _array([3, 0, 3]))
    first = solve_aggregated(problem, bounds)
    assert first == Undecomposed(frozenset({0}))
    placed = solve_aggregated(problem, bounds, frozenset({0}))
    assert isinstance(placed, list)
    assert [sorted(p) for p in placed] == [[0, 2], [0]]
    assert [sorted(p) for p in placed] == [sorted(p) for p in solve_dense(problem, bounds) or []]
    assert [sorted(p) for p in place(problem, bounds)] == [[0, 2], [0]]


@st.composite
def problems(draw: st.DrawFn) -> tuple[PlacementProblem, Bounds]:
    """Random small problems shaped like the planner's: items with 1..3 copies, entry tiers per rack (some
    excluding one client of it, as a standby avoids its active), direct arcs to a few clients."""
    racks = draw(st.lists(st.integers(1, 4), min_size=1, max_size=3))
    client_rack = _array([r for r, size in enumerate(racks) for _ in range(size)])
    n_clients = len(client_rack)
    n_items = draw(st.integers(1, 8))
    supply = [draw(st.integers(1, min(3, n_clients))) for _ in range(n_items)]
    entry: list[tuple[int, int, int, int, int]] = []
    direct: list[tuple[int, int, int]] = []
    for item in range(n_items):
        excluded = draw(st.one_of(st.just(NO_EXCLUSION), st.integers(0, n_clients - 1)))
        for rack in range(len(racks)):
            exclude = excluded if excluded != NO_EXCLUSION and client_rack[excluded] == rack else NO_EXCLUSION
            cost = draw(st.integers(0, 9))
            entry.append((item, rack, exclude, 1, cost))
            if supply[item] > 1:
                entry.append((item, rack, exclude, supply[item] - 1, cost + draw(st.integers(0, 9))))
        for client in draw(st.lists(st.integers(0, n_clients - 1), unique=True, max_size=2)):
            if client != excluded:
                direct.append((item, client, draw(st.integers(0, 9))))
    total = sum(supply)
    lower = [draw(st.integers(0, total // n_clients)) for _ in range(n_clients)]
    upper = [low + draw(st.integers(0, total)) for low in lower]
    problem = PlacementProblem(
        client_rack=client_rack,
        n_racks=len(racks),
        supply=_array(supply),
        item_group=_array([0] * n_items),
        n_groups=1,
        entry_item=_array([e[0] for e in entry]),
        entry_rack=_array([e[1] for e in entry]),
        entry_exclude=_array([e[2] for e in entry]),
        entry_capacity=_array([e[3] for e in entry]),
        entry_cost=_array([e[4] for e in entry]),
        direct_item=_array([d[0] for d in direct]),
        direct_client=_array([d[1] for d in direct]),
        direct_cost=_array([d[2] for d in direct]),
    )
    return problem, Bounds(_array(lower), _array(upper))


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(problems())
def test_aggregated_placement_is_one_the_exact_graph_allows(case: tuple[PlacementProblem, Bounds]) -> None:
    problem, bounds = case
    exact = solve_dense(problem, bounds)
    aggregated = _aggregated_with_fallback(problem, bounds)
    assert (aggregated is None) == (exact is None), (aggregated, exact)
    if aggregated is not None:
        assert not _violations(problem, bounds, aggregated), _violations(problem, bounds, aggregated)
