"""Test configuration of the planner's suite.

The oracle (`rules.py`) and the cluster generators (`strategies.py`) are plain modules next to the tests.
This folder is deliberately not a package: a package named `assignor` would collide with the top-level
`assignor/` folder when pytest runs from the repository root. So the folder itself goes on `sys.path`,
which also makes the helpers importable under ``--import-mode=importlib``.
"""

import sys
from pathlib import Path

HERE = str(Path(__file__).resolve().parent)
if HERE not in sys.path:
    sys.path.insert(0, HERE)
