"""The client library runs in the app's pods: `pip install smoothscale[client]` must not bring the planner
(numpy, OR-Tools) along, and the library must work without them.

The first test walks the installed distributions' declared requirements from `smoothscale[client]` (what pip
would install for that extra), so a planner dependency moved back into the base, or pulled in by a client
dependency, fails it. The second imports the library in a fresh interpreter in which numpy and OR-Tools
cannot be imported, and reads a publication out of a ConfigMap through the contract's codec.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap
from importlib import metadata

from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

PLANNER = {"numpy", "ortools"}


def _installed_closure(root: str, extras: set[str]) -> set[str]:
    """Every distribution `root[extras]` requires, transitively, by the installed packages' metadata."""
    seen: set[str] = set()
    pending: list[tuple[str, set[str]]] = [(root, extras)]
    while pending:
        name, wanted = pending.pop()
        key = canonicalize_name(name)
        if key in seen and not wanted:
            continue
        seen.add(key)
        for line in metadata.requires(name) or []:
            requirement = Requirement(line)
            marker = requirement.marker
            if marker is not None and not any(
                marker.evaluate({"extra": extra}) for extra in (wanted or {""})
            ):
                continue
            pending.append((requirement.name, set(requirement.extras)))
    return seen


def test_the_client_extra_installs_neither_numpy_nor_ortools() -> None:
    closure = _installed_closure("smoothscale", {"client"})
    assert {"kubernetes", "prometheus-client", "pydantic"} <= closure
    assert not closure & PLANNER, sorted(closure & PLANNER)
    # The extras that plan do bring the solver: the move kept it where it runs.
    assert _installed_closure("smoothscale", {"operator"}) >= PLANNER


def test_the_client_library_works_without_the_planner() -> None:
    program = textwrap.dedent(
        """
        import sys

        class NoPlanner:
            def find_spec(self, name, path=None, target=None):
                if name.split(".")[0] in {"numpy", "ortools"}:
                    raise ImportError(f"{name} is not installed in an app's pod")
                return None

        sys.meta_path.insert(0, NoPlanner())
        from smoothscale.client import StreamsClient, from_configmap
        from smoothscale.contract.configmap import configmap_content
        from smoothscale.contract.publication import ClientAssignment, Publication

        published = Publication(generation=4, assignment={"orders-0": ClientAssignment(active=["0_1"])})
        assert from_configmap(configmap_content(published)) == published
        assert not {"numpy", "ortools"} & {m.split(".")[0] for m in sys.modules}
        print("ok")
        """
    )
    result = subprocess.run(
        [sys.executable, "-c", program], check=False, capture_output=True, text=True, timeout=120
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "ok"
