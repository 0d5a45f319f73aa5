"""A placement problem: items (tasks) whose copies go to clients, and the count bounds to respect."""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from smoothscale.assignor.cluster import IntArray

NO_EXCLUSION = -1
UNLIMITED = np.iinfo(np.int32).max


@dataclass(frozen=True, slots=True)
class Bounds:
    """Count bounds per client, and optionally per (group, client) and per (class, client).

    Groups are subtopologies (balanced each on its own); classes gather groups whose sum is bounded
    together (all stateless actives, say, next to standbys that share the same clients).
    """

    client_lower: IntArray
    client_upper: IntArray
    group_lower: IntArray | None = None
    group_upper: IntArray | None = None
    class_lower: IntArray | None = None
    class_upper: IntArray | None = None

    def relaxations(self) -> list[Bounds]:
        """The bounds to try in order, when the full set cannot hold together.

        With classes, the client bounds are the total load (the softest promise) and go first; then the
        per-group bounds; then every lower bound; last, only the structure (distinct clients, exclusions).
        """
        open_lower = np.zeros_like(self.client_lower)
        open_upper = np.full_like(self.client_upper, UNLIMITED)
        client = (self.client_lower, self.client_upper)
        if self.class_lower is not None:
            client = (open_lower, open_upper)
        steps = [self]
        if self.class_lower is not None:
            steps.append(replace(self, client_lower=client[0], client_upper=client[1]))
        ungrouped = replace(
            self, client_lower=client[0], client_upper=client[1], group_lower=None, group_upper=None
        )
        if self.group_lower is not None:
            steps.append(ungrouped)
        no_lower = replace(
            ungrouped,
            client_lower=open_lower,
            class_lower=None if self.class_lower is None else np.zeros_like(self.class_lower),
        )
        steps.append(no_lower)
        steps.append(
            replace(
                no_lower,
                client_upper=open_upper,
                class_upper=None if self.class_upper is None else np.full_like(self.class_upper, UNLIMITED),
            )
        )
        return steps


@dataclass(frozen=True, slots=True)
class PlacementProblem:
    """Items (tasks) to place, each needing `supply` copies on distinct clients.

    Clients are local positions 0..n_clients-1; `client_rack` gives each one's rack. Entry arcs put copies of
    an item into a rack (optionally excluding one client of that rack); direct arcs put a copy on one client.
    Costs are integers, already scaled by the caller.
    """

    client_rack: IntArray
    n_racks: int
    supply: IntArray
    item_group: IntArray
    n_groups: int
    entry_item: IntArray
    entry_rack: IntArray
    entry_exclude: IntArray
    entry_capacity: IntArray
    entry_cost: IntArray
    direct_item: IntArray
    direct_client: IntArray
    direct_cost: IntArray
    group_class: IntArray | None = None  # per group: its class, when classes are bounded

    @property
    def n_items(self) -> int:
        return len(self.supply)

    @property
    def n_clients(self) -> int:
        return len(self.client_rack)


class PlacementInfeasible(RuntimeError):
    """Even without balance bounds the copies do not fit (too few distinct clients)."""
