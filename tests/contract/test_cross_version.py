"""Releases across the contract (issue 34), each side the code of its own commit: the client library of the
first versioned release follows a publication of a later operator that adds a field, and refuses one of a
newer contract version, naming both; the client library of this checkout follows what the operator before
versions wrote. The older side is that commit's `smoothscale.contract` and `smoothscale.client`, extracted by
`benchmarks/baseline_tree.py` and imported first in a process of their own (checked, so that a mix-up of
sides fails loudly). Light on purpose: a mounted ConfigMap volume, no API server, no broker."""

from __future__ import annotations

import base64
import gzip
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from versions_testkit import (
    BASELINE,
    BEFORE_VERSIONS,
    FIRST_VERSIONED,
    FOLLOWED,
    POD,
    PUBLICATION,
    later_operator,
)

from smoothscale.client import ClientConfig, StreamsClient, TaskListener
from smoothscale.contract import shared_names as contract

REPOSITORY = Path(__file__).resolve().parents[2]

FOLLOW = """
import json, logging, sys, time
from pathlib import Path
import smoothscale.client, smoothscale.contract.configmap
from smoothscale.client import ClientConfig, StreamsClient, TaskListener

said = []
class Said(logging.Handler):
    def emit(self, record):
        said.append(record.getMessage())
logging.getLogger("smoothscale.client").addHandler(Said(logging.WARNING))
config = ClientConfig(pod=sys.argv[2], namespace="shop", app="orders", assignment_dir=Path(sys.argv[1]),
                      metrics_port=None, poll_seconds=0.01)
with StreamsClient(config, TaskListener()) as client:
    deadline = time.monotonic() + 10
    while client.applier.generation < 1 and not said and time.monotonic() < deadline:
        time.sleep(0.01)
    roles = {task: role.value for task, role in client.applier.roles().items()}
    print(json.dumps({"client": smoothscale.client.__file__,
                      "contract": smoothscale.contract.configmap.__file__,
                      "generation": client.applier.generation, "roles": roles, "said": said}))
"""
WRITE = """
import json, sys
import smoothscale.contract.configmap
from smoothscale.contract.configmap import configmap_content
from smoothscale.contract.publication import Publication
publication = Publication.model_validate_json(sys.stdin.read())
content = configmap_content(publication)
print(json.dumps({"contract": smoothscale.contract.configmap.__file__, "content": content}))
"""


def _run_at(ref: str, packages: dict[str, str], script: str, *args: str, stdin: str = "") -> dict[str, Any]:
    """`script`'s JSON line, run with `ref`'s copy of each package (name -> a file it holds) imported first;
    fails unless every module it names (`{package: __file__}`) came from that copy."""
    roots = {
        package: BASELINE.baseline_tree(ref, package, sentinel)[1] for package, sentinel in packages.items()
    }
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([*map(str, roots.values()), str(REPOSITORY / "src")])
    done = subprocess.run(
        [sys.executable, "-c", script, *args],
        input=stdin,
        capture_output=True,
        text=True,
        env=env,
        cwd=REPOSITORY,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    answer: dict[str, Any] = json.loads(done.stdout.splitlines()[-1])
    for package, root in roots.items():
        assert BASELINE.check_origin(answer[package], root, package) is None, answer[package]
    return answer


def _mount(directory: Path, configmap: dict[str, Any]) -> Path:
    """The ConfigMap as the kubelet mounts it: one file per key, binaryData's raw bytes."""
    (directory / contract.ASSIGNMENT_KEY).write_bytes(
        base64.b64decode(configmap["binaryData"][contract.ASSIGNMENT_KEY])
    )
    (directory / contract.GENERATION_KEY).write_text(configmap["data"][contract.GENERATION_KEY])
    return directory


def _follow_at_first_versioned(configmap: dict[str, Any]) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="cross-version-") as name:
        mounted = _mount(Path(name), configmap)
        packages = {"contract": "configmap.py", "client": "client.py"}
        return _run_at(FIRST_VERSIONED, packages, FOLLOW, str(mounted), POD)


def test_the_first_versioned_client_follows_a_later_operator_that_adds_fields() -> None:
    followed = _follow_at_first_versioned(later_operator({"placementHints": {"orders-1": "zone-a"}}))
    assert followed["said"] == []
    assert followed["generation"] == PUBLICATION.generation
    assert followed["roles"] == FOLLOWED


def test_the_first_versioned_client_refuses_a_newer_contract_naming_both_versions() -> None:
    refused = _follow_at_first_versioned(later_operator({"version": 2}))
    assert refused["generation"] == 0 and refused["roles"] == {}
    assert any(
        "contract version 2" in line
        and "versions up to 1" in line
        and "upgrade the smoothscale client library or bridge" in line
        for line in refused["said"]
    ), refused["said"]


def test_this_client_follows_what_the_operator_before_versions_wrote() -> None:
    written = _run_at(
        BEFORE_VERSIONS,
        {"contract": "configmap.py"},
        WRITE,
        stdin=PUBLICATION.model_dump_json(exclude={"version"}),
    )
    configmap = written["content"]
    stated = json.loads(gzip.decompress(base64.b64decode(configmap["binaryData"][contract.ASSIGNMENT_KEY])))
    assert "version" not in stated  # the operator of that commit wrote none
    with tempfile.TemporaryDirectory(prefix="cross-version-") as name:
        config = ClientConfig(
            pod=POD,
            namespace="shop",
            app="orders",
            assignment_dir=_mount(Path(name), configmap),
            metrics_port=None,
            poll_seconds=0.01,
        )
        with StreamsClient(config, TaskListener()) as client:
            deadline = time.monotonic() + 10
            while client.applier.generation < PUBLICATION.generation and time.monotonic() < deadline:
                time.sleep(0.01)
            roles = {task: role.value for task, role in client.applier.roles().items()}
    assert roles == FOLLOWED
