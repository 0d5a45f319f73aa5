"""A deterministic discrete-event simulator of a Streams-style app under the operator's control.

It runs the real planner and the real two-phase hand-over against a modelled cluster (restore bandwidth,
processing rates, volumes, zones) to measure what scaling costs: downtime, time to balance against its
physical lower bound, restore and cross-zone traffic, generations, skew. Pure: no Kubernetes, no files.
"""

from smoothscale.simulation.engine import simulate
from smoothscale.simulation.invariants import InvariantViolation
from smoothscale.simulation.metrics import EventOutcome, SimulationResult
from smoothscale.simulation.scenario import Scenario, ScenarioError, parse_scenario
from smoothscale.simulation.strategies import STRATEGY_NAMES

__all__ = [
    "STRATEGY_NAMES",
    "EventOutcome",
    "InvariantViolation",
    "Scenario",
    "ScenarioError",
    "SimulationResult",
    "parse_scenario",
    "simulate",
]
