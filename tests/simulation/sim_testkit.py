"""Helpers of the simulator's tests: the scenario library (parsed once), a small hand-checked scenario."""

from __future__ import annotations

from functools import cache
from pathlib import Path
from typing import Any

import yaml

from smoothscale.simulation import Scenario, parse_scenario

LIBRARY = Path(__file__).resolve().parents[2] / "examples" / "scenarios"
SCENARIO_FILES = sorted(LIBRARY.glob("*.yaml"))


@cache
def library_scenario(name: str) -> Scenario:
    return parse_scenario(yaml.safe_load((LIBRARY / f"{name}.yaml").read_text()))


def small_scenario(**overrides: Any) -> Scenario:
    """Four 1 M-record tasks on one pod; a second joins at 65 s. Restores take 20 s at 50 k records/s."""
    data: dict[str, Any] = {
        "name": "small",
        "app": "small",
        "zones": ["zone-a"],
        "pods": {
            "count": 1,
            "restoreRecordsPerSecondPerCopy": 50_000,
            "restoreRecordsPerSecondPerPod": 100_000,
        },
        "topology": {"subtopologies": [{"partitions": 4, "changelogRecords": 1_000_000}]},
        "events": [{"at": 65, "type": "scaleOut", "pods": 1}],
    }
    data.update(overrides)
    return parse_scenario(data)
