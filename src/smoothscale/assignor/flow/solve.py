"""The placement's entry point: the exact graph when small, the aggregated one otherwise, bounds relaxed
step by step when they cannot all hold together."""

from __future__ import annotations

from smoothscale.assignor.flow.aggregated import Undecomposed, solve_aggregated
from smoothscale.assignor.flow.dense import solve_dense
from smoothscale.assignor.flow.problem import Bounds, PlacementInfeasible, PlacementProblem

# Up to this many (task, client) pairs, tasks with several copies get the exact dense graph.
DENSE_LIMIT = 200_000


def place(problem: PlacementProblem, bounds: Bounds) -> list[list[int]]:
    """Solve the placement; returns, per item, the local client positions of its copies, all distinct.

    Every count bound holds unless no placement can meet them all; then the bounds are relaxed in the order
    of `Bounds.relaxations`, never by placing a copy outside the flow.
    """
    for attempt in bounds.relaxations():
        result = _solve(problem, attempt)
        if result is not None:
            return result
    raise PlacementInfeasible("copies do not fit on distinct clients")


def _solve(problem: PlacementProblem, bounds: Bounds) -> list[list[int]] | None:
    many_copies = problem.n_items > 0 and int(problem.supply.max()) > 1
    if many_copies and problem.n_items * problem.n_clients <= DENSE_LIMIT:
        return solve_dense(problem, bounds)
    dense_racks: frozenset[int] = frozenset()
    while True:
        result = solve_aggregated(problem, bounds, dense_racks)
        if not isinstance(result, Undecomposed):
            return result
        # Racks solved densely are exact, so each round adds racks and the loop ends.
        assert not result.racks <= dense_racks, "a dense rack is always decomposed"
        dense_racks |= result.racks
