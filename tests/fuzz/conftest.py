"""Test configuration of the fuzzing suite.

The planner's oracle (`tests/assignor/rules.py`, `check_plan`) and its cluster generators
(`tests/assignor/strategies.py`) are plain modules, not a package (see that folder's conftest): the folder
goes on `sys.path` so that the fuzz tests judge plans by the very same rules, not by a copy of them.
"""

import sys
from pathlib import Path

ASSIGNOR_TESTS = str(Path(__file__).resolve().parent.parent / "assignor")
if ASSIGNOR_TESTS not in sys.path:
    sys.path.insert(0, ASSIGNOR_TESTS)
