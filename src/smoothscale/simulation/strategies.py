"""What the three strategies the simulator compares change in the operator's decisions.

All three run the operator's round (`control.step.step`, through `operator_loop`): its planner, its plan
triggers, its pod set and its two-phase hand-over. They differ only in which of the step's triggers they
honour (`RoundConfig.probing`, `RoundConfig.catch_up_after`), in what they take from a plan (`planned`) and
in what each generation aims at (`gate`, the step's `RoundConfig.aim`):

- `eager`: the stop-the-world baseline. It re-plans only when the spec or the pods change (no probe, no
  catch-up trigger) and applies the plan's balanced `target` at once: every pod first stops all its
  actives (one generation, acknowledged by every pod), then the target is published and moved tasks
  restore before they process.
- `kip441`: Kafka Streams' defaults. It publishes the plan's `assignment` (actives only on caught-up pods,
  warmups toward the target) and re-plans when the spec or the pods change and on the followup probe, every
  `probing.rebalance.interval.ms` = 10 minutes (no catch-up trigger). The warmup cap and acceptable recovery
  lag come from the scenario, whose defaults are Kafka's (2 and 10,000), so that a comparison isolates the
  trigger.
- `smoothscale`: the operator as it runs: every trigger of the core, including a re-plan as soon as a copy
  the last plan waits for has caught up (with `catchUpTrigger: batched`, once all of some pod's have); the
  probe stays as a safety net.
"""

from __future__ import annotations

from abc import ABC
from collections.abc import Mapping, Set
from typing import ClassVar

from smoothscale.assignor.models import Plan, PlannerConfig
from smoothscale.contract.publication import ClientAssignment, Publication

KAFKA_PROBING_INTERVAL_SECONDS = 600.0
"""Kafka Streams' default `probing.rebalance.interval.ms` (KIP-441)."""

REPLAN_MIN_INTERVAL_SECONDS = 0.0
"""No debounce of catch-up re-plans beyond the scrape interval: the operator has none (it re-plans at the
first scrape that sees a copy caught up), and the `smoothscale` strategy is the operator. A scenario may set
`operator.replanMinIntervalSeconds` to measure one (`benchmarks/sim_bench.py` sweeps it).

Measured on the 3 -> 6 scale-out with changelog sizes jittered by 30% and 10 s scrapes: 0 or 10 s: 1,167 s
to balance, 37 generations; 20 s: 1,187 s, 43; 30 s: 1,197 s, 43; 60 s: 1,357 s, 43 (ratios to the lower
bound 1.08, 1.11, 1.12, 1.26): a caught-up warmup holds a slot that restores nothing until the re-plan frees
it, so a longer debounce only costs time.
"""


class Strategy(ABC):
    name: ClassVar[str]
    probes: ClassVar[bool] = True
    """Whether to re-plan when the last plan's follow-up probe is due (`RoundConfig.probing`)."""
    catch_up_after: float | None = None
    """Seconds after a plan from which a caught-up copy re-plans (`RoundConfig.catch_up_after`; None:
    never)."""

    def planner_config(self, config: PlannerConfig) -> PlannerConfig:
        return config

    def planned(self, plan: Plan) -> Plan:
        """The plan as this strategy publishes it (through the hand-over): its `assignment` is the aim."""
        return plan

    def gate(
        self,
        desired: Mapping[str, ClientAssignment],
        published: Publication,
        acked: Mapping[str, int],
        alive: Set[str],
    ) -> Mapping[str, ClientAssignment]:
        """What to aim the next generation at, given how far the last plan's publication has got
        (`RoundConfig.aim`)."""
        return desired


class Eager(Strategy):
    name = "eager"
    probes = False

    def __init__(self) -> None:
        self._released = True  # no rebalance in progress

    def planned(self, plan: Plan) -> Plan:
        """The balanced target at once, with nothing to follow up: the rebalance ends when it is published."""
        self._released = False  # every rebalance stops the world first
        target = {
            pod: ClientAssignment(active=target.active, standby=target.standby)
            for pod, target in plan.target.items()
        }
        return plan.model_copy(update={"assignment": target, "stable": True, "followup": None})

    def gate(
        self,
        desired: Mapping[str, ClientAssignment],
        published: Publication,
        acked: Mapping[str, int],
        alive: Set[str],
    ) -> Mapping[str, ClientAssignment]:
        if not self._released:
            # Released once no pod may still be processing anything: nothing is published active and
            # every pod that was told to stop has reported that generation (or is gone).
            everyone_stopped = not published.active_owner() and all(
                r.owner not in alive or acked.get(r.owner, -1) >= r.generation
                for r in published.revoking.values()
            )
            if not everyone_stopped:
                return {pod: a.model_copy(update={"active": []}) for pod, a in desired.items()}
            self._released = True
        return desired


class Kip441(Strategy):
    name = "kip441"

    def planner_config(self, config: PlannerConfig) -> PlannerConfig:
        return config.model_copy(update={"probing_interval_seconds": KAFKA_PROBING_INTERVAL_SECONDS})


class Smoothscale(Strategy):
    name = "smoothscale"

    def __init__(self, min_interval_seconds: float = REPLAN_MIN_INTERVAL_SECONDS) -> None:
        self.catch_up_after = min_interval_seconds


STRATEGY_NAMES = ("eager", "kip441", "smoothscale")


def make_strategy(name: str, replan_min_interval_seconds: float | None = None) -> Strategy:
    if name == "eager":
        return Eager()
    if name == "kip441":
        return Kip441()
    if name == "smoothscale":
        return Smoothscale(
            REPLAN_MIN_INTERVAL_SECONDS
            if replan_min_interval_seconds is None
            else replan_min_interval_seconds
        )
    raise ValueError(f"unknown strategy {name!r}; expected one of {', '.join(STRATEGY_NAMES)}")
