"""Test configuration of the bridge's tests: `tests/contract/` goes on `sys.path`, so that the bridge's
cross-version test pins the same releases and writes the same later publication as the client library's
(`versions_testkit`), not a copy of them."""

import sys
from pathlib import Path

CONTRACT_TESTS = str(Path(__file__).resolve().parent.parent / "contract")
if CONTRACT_TESTS not in sys.path:
    sys.path.insert(0, CONTRACT_TESTS)
