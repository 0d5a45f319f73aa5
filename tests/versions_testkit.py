"""What the cross-version tests share (`tests/contract/test_cross_version.py` for the client library,
`tests/bridge/test_bridge_cross_version.py` for the bridge, the releases side by side under running apps in
`tests/sandbox_e2e/test_sandbox_e2e_upgrade.py` and `tests/bridge/test_bridge_operator_releases.py`): the
releases they pin, one publication, this operator's ConfigMap of it as a later release would write it, and a
release's packages and sample jar. At the tests' root (on the path of every test, as `tests/conftest.py` is):
in a folder, only a run that collected that folder could import it."""

from __future__ import annotations

import base64
import fcntl
import gzip
import importlib.util
import io
import json
import os
import subprocess
import tarfile
from pathlib import Path
from types import ModuleType
from typing import Any

from smoothscale.contract import shared_names as contract
from smoothscale.contract.publication import ClientAssignment, Publication
from smoothscale.operator.appref import AppRef
from smoothscale.operator.publish import build_assignment_configmap
from smoothscale.sandbox.kafka import jars

FIRST_VERSIONED = "bb172b8d763de51bc06028b6f5a3fed398a7b8e5"
"""The first commit whose readers follow versioned publications: the oldest release a later one must keep."""
BEFORE_VERSIONS = "3edcfbf2619407188d5e9562ff4d810c4941c1c3"
"""The last commit before versions: its operator wrote publications without one."""
POD = "orders-1"
PUBLICATION = Publication(
    generation=3,
    assignment={
        "orders-0": ClientAssignment(active=["0_0", "0_2"], standby=["0_1"]),
        POD: ClientAssignment(active=["0_1"], standby=["0_0"], warmup=["0_2"]),
    },
)
FOLLOWED = {"0_1": "active", "0_0": "standby", "0_2": "warmup"}
"""POD's roles in PUBLICATION."""


def later_operator(changes: dict[str, Any]) -> dict[str, Any]:
    """This operator's ConfigMap for PUBLICATION, as a later release would write it: `changes` to the JSON,
    and a field added to POD's roles."""
    configmap = build_assignment_configmap(AppRef("shop", "orders", "uid-1"), PUBLICATION)
    document = json.loads(gzip.decompress(base64.b64decode(configmap["binaryData"][contract.ASSIGNMENT_KEY])))
    document.update(changes)
    document["assignment"][POD]["pausedUntil"] = "a field of a pod's roles a later release adds"
    raw = gzip.compress(json.dumps(document).encode(), mtime=0)
    configmap["binaryData"][contract.ASSIGNMENT_KEY] = base64.b64encode(raw).decode()
    return configmap


REPOSITORY = Path(__file__).resolve().parents[1]
RELEASE_PACKAGES = {
    "assignor": "__init__.py",
    "cli": "__init__.py",
    "client": "client.py",
    "contract": "configmap.py",
    "control": "step.py",
    "operator": "__init__.py",
    "resource": "__init__.py",
    "sandbox": "worker.py",
}
"""The packages a process of another release runs from that release (package -> a file of it): a pod is the
sample worker of that release on its client library and contract, the operator that release's operator; the
same set serves both (with only the client library and contract, the first try failed on this checkout's
worker command, which reads names that release did not have: the worker is the pod's app and goes with
it)."""


def _baseline_tree() -> ModuleType:
    spec = importlib.util.spec_from_file_location(
        "baseline_tree", REPOSITORY / "benchmarks" / "baseline_tree.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


BASELINE = _baseline_tree()
"""`benchmarks/baseline_tree.py` (not a package): a commit's copy of a package, where a module came from."""


def release_path(ref: str) -> str:
    """A PYTHONPATH importing `ref`'s copy of each of `RELEASE_PACKAGES` first, this checkout's code after."""
    roots = [
        str(BASELINE.baseline_tree(ref, name, sentinel)[1]) for name, sentinel in RELEASE_PACKAGES.items()
    ]
    return os.pathsep.join([*roots, str(REPOSITORY / "src")])


def release_sample_jar(sha: str) -> Path:
    """The Java sample app's runnable jar (the bridge shaded in) as the commit `sha` (a full id, as the
    releases above are pinned) built it: its `bridge/` extracted under the cache
    (`~/.cache/smoothscale/release-jars/<sha>/`) and packaged with Maven once (its tests skipped: that
    release ran them; offline under `SMOOTHSCALE_MAVEN_OFFLINE=1`, as `.ci/bridge.sh`), under a lock so that
    two test workers do not build it at once."""
    root = jars.cache_root() / "release-jars" / sha
    jar = root / "bridge" / "sample-app" / "target" / "sample-app.jar"
    root.mkdir(parents=True, exist_ok=True)
    with (root.parent / f"{sha}.lock").open("w") as held:
        fcntl.flock(held, fcntl.LOCK_EX)
        if not jar.is_file():
            archive = subprocess.run(
                ["git", "archive", sha, "bridge"], cwd=REPOSITORY, capture_output=True, check=True
            ).stdout
            with tarfile.open(fileobj=io.BytesIO(archive)) as tree:
                tree.extractall(root, filter="data")
            offline = ["-o"] if os.environ.get("SMOOTHSCALE_MAVEN_OFFLINE") == "1" else []
            subprocess.run(
                ["mvn", "-B", "-ntp", "-q", *offline, "-DskipTests", "-pl", "sample-app", "-am", "package"],
                cwd=root / "bridge",
                check=True,
                stdin=subprocess.DEVNULL,
                stdout=2,
            )
    return jar
