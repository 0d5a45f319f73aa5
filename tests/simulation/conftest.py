"""Test configuration of the simulator's suite.

The helpers live in `sim_testkit.py`, a plain module next to the tests (named so that no other test folder's
helpers can shadow it). This folder is not a package, so the folder itself goes on `sys.path`, as in
tests/assignor, which also makes the helpers importable under ``--import-mode=importlib``.
"""

import sys
from pathlib import Path

HERE = str(Path(__file__).resolve().parent)
if HERE not in sys.path:
    sys.path.insert(0, HERE)
