"""The version of Contract 3 (the publication the operator writes, the metrics the pods report), and the one
rule every reader on either side applies to it, so that the operator, the client library and the bridge can
be upgraded one at a time under running apps.

A writer states `CONTRACT_VERSION`; a payload that states none was written before versions existed and is
version 1. A reader follows every version up to its own and ignores the fields (or metrics) it does not know:
a release that adds one does not bump the version, so older readers keep following it. The version goes up
only when an older reader would misread the payload (a field's meaning changed); such a reader refuses it
with `NewerContract`, which names both versions and what to upgrade, instead of acting on a misreading.
"""

from __future__ import annotations

from typing import Final

CONTRACT_VERSION: Final = 1
"""The contract version this release writes, and the highest it follows."""
UNVERSIONED: Final = 1
"""The version of a payload that states none (written before the contract had versions)."""


class NewerContract(ValueError):
    """A payload states a contract version above the reader's: it may mean something the reader would
    misread, so the reader follows none of it."""


def require_followable(version: int, *, payload: str, upgrade: str) -> None:
    """Raises NewerContract if `version` (the one `payload` states) is above `CONTRACT_VERSION`; `upgrade`
    says what to upgrade so that it follows."""
    if version > CONTRACT_VERSION:
        raise NewerContract(
            f"{payload} follows contract version {version}, but this reader follows versions up to "
            f"{CONTRACT_VERSION}: upgrade {upgrade}"
        )
