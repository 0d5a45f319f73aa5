"""Fuzzed assignment ConfigMaps: a pod given a corrupt publication, or one older than the generation it has
applied, keeps its current work (no callback, the same roles and generation) and says so in a warning.

`tests/sandbox/test_sandbox_client.py` shows this for three hand-made cases over the API; here hypothesis
writes many into the mounted ConfigMap directory a running `StreamsClient` follows."""

from __future__ import annotations

import base64
import contextlib
import gzip
import json
import logging
import os
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from hypothesis import assume, given, settings
from hypothesis import strategies as st

from smoothscale.client import ClientConfig, Role, StreamsClient, TaskListener
from smoothscale.client.publication import from_mounted_dir
from smoothscale.contract import shared_names as contract
from smoothscale.contract.configmap import (
    CorruptAssignment,
    decode_publication,
    encode_publication,
    from_configmap,
)
from smoothscale.contract.publication import ClientAssignment, Publication

POD = "orders-0"
APPLIED = 5
TASKS = [f"0_{p}" for p in range(4)]
JSON = st.recursive(
    st.one_of(st.none(), st.booleans(), st.integers(), st.text(max_size=6)),
    lambda children: st.one_of(
        st.lists(children, max_size=3), st.dictionaries(st.text(max_size=6), children, max_size=3)
    ),
    max_leaves=8,
)


def _publication(generation: int, active: list[str]) -> Publication:
    return Publication(generation=generation, assignment={POD: ClientAssignment(active=active)})


class _Calls(TaskListener):
    """Counts every callback: a refused publication must cause none."""

    def __init__(self) -> None:
        self.count = 0

    def _called(self, task: str) -> None:
        self.count += 1

    on_revoked = on_assigned = on_standby_started = on_standby_stopped = _called
    on_warmup_started = on_warmup_stopped = _called


class _Said(logging.Handler):
    """The client's warnings, as a list a test can wait on."""

    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.lines: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.lines.append(record.getMessage())


class _Volume:
    """A ConfigMap volume as the kubelet updates it: each version in a directory of its own, swapped in at
    once by renaming a symlink (`..data`), so that a reader never pairs one version's assignment with
    another's generation."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.mount = root / "mount"
        self._versions = 0

    def write(self, assignment: bytes, generation: str | None) -> None:
        self._versions += 1
        version = self.root / f"v{self._versions}"
        version.mkdir()
        (version / contract.ASSIGNMENT_KEY).write_bytes(assignment)
        # The client tells versions apart by mtime and size (to warn once per version); versions written
        # within one clock tick would look alike, where a kubelet's are seconds apart.
        os.utime(version / contract.ASSIGNMENT_KEY, ns=(self._versions * 10**9,) * 2)
        if generation is not None:
            (version / contract.GENERATION_KEY).write_text(generation)
        staged = self.root / "mount.new"
        staged.symlink_to(version, target_is_directory=True)
        staged.replace(self.mount)


def _wait(check: Callable[[], bool], what: str) -> None:
    deadline = time.monotonic() + 5
    while not check():
        assert time.monotonic() < deadline, f"the client never said {what}"
        time.sleep(0.01)


def _decodes(raw: bytes) -> bool:
    try:
        decode_publication(raw)
    except ValueError:
        return False
    return True


@st.composite
def corruptions(draw: st.DrawFn) -> tuple[bytes, str | None, str]:
    """(assignment bytes, generation file, the warning expected): broken bytes, gzip'd garbage, a generation
    file that contradicts the publication, or a valid publication older than the applied one."""
    valid = encode_publication(_publication(APPLIED + 1, TASKS[:2]))
    kind = draw(st.sampled_from(["bytes", "garbage", "mismatch", "older"]))
    if kind == "bytes":
        cut = draw(st.integers(0, len(valid) - 1))
        broken = valid[:cut] + draw(st.binary(max_size=8)) + valid[cut + draw(st.integers(1, 4)) :]
        assume(not _decodes(broken))  # gzip's CRC leaves the header's mtime and OS bytes unchecked
        return broken, None, "ignores a corrupt assignment"
    if kind == "garbage":
        document = draw(JSON.filter(lambda value: not (isinstance(value, dict) and "generation" in value)))
        return gzip.compress(json.dumps(document).encode()), None, "ignores a corrupt assignment"
    if kind == "mismatch":
        generation = draw(st.integers(APPLIED + 1, APPLIED + 9))
        stated = draw(st.sampled_from([str(generation + 1), "", "x", str(APPLIED)]))
        published = encode_publication(_publication(generation, TASKS[2:]))
        return published, stated, "ignores a corrupt assignment"
    older = draw(st.integers(0, APPLIED - 1))
    active = draw(st.lists(st.sampled_from(TASKS), unique=True))
    return encode_publication(_publication(older, active)), str(older), f"generation {older}: older than"


def test_a_corrupt_or_older_generation_keeps_the_current_work_and_says_so() -> None:
    said, calls = _Said(), _Calls()
    logger = logging.getLogger("smoothscale.client")
    logger.addHandler(said)
    with tempfile.TemporaryDirectory(prefix="fuzz-assignment-") as name:
        volume = _Volume(Path(name))
        config = ClientConfig(
            pod=POD,
            namespace="default",
            app="orders",
            assignment_dir=volume.mount,
            metrics_port=None,
            poll_seconds=0.01,
        )
        volume.write(encode_publication(_publication(APPLIED, TASKS[:2])), str(APPLIED))
        try:
            with StreamsClient(config, calls) as client:
                _wait(lambda: client.applier.generation == APPLIED, "it applied the first generation")
                before = calls.count

                @given(corruptions())
                @settings(max_examples=60, deadline=None, database=None)
                def offered(case: tuple[bytes, str | None, str]) -> None:
                    assignment, generation, warning = case
                    lines = len(said.lines)
                    volume.write(assignment, generation)
                    if warning.startswith("generation"):  # said once per refused generation
                        _wait(lambda: any(warning in line for line in said.lines), warning)
                    else:
                        _wait(lambda: any(warning in line for line in said.lines[lines:]), warning)
                    assert client.applier.generation == APPLIED
                    assert client.applier.roles() == dict.fromkeys(TASKS[:2], Role.ACTIVE)
                    assert calls.count == before
                    assert all("current work continues" in line for line in said.lines)

                offered()
        finally:
            logger.removeHandler(said)


@given(
    st.dictionaries(
        st.sampled_from(["binaryData", "data", "metadata"]),
        st.one_of(
            JSON,
            st.dictionaries(
                st.sampled_from([contract.ASSIGNMENT_KEY, contract.GENERATION_KEY]),
                st.one_of(JSON, st.binary(max_size=40).map(lambda raw: base64.b64encode(raw).decode())),
            ),
        ),
    )
)
@settings(max_examples=300, deadline=None)
def test_any_configmap_body_is_a_publication_or_corrupt(body: dict[str, Any]) -> None:
    with contextlib.suppress(CorruptAssignment):
        from_configmap(body)


def test_a_version_swapped_in_between_the_two_reads_is_never_paired(monkeypatch: Any) -> None:
    """The kubelet may swap in the next version while a reader is between the assignment and the generation
    file: a mismatched publication must not pass because the next version has no generation file."""
    with tempfile.TemporaryDirectory(prefix="swap-") as name:
        volume = _Volume(Path(name))
        volume.write(encode_publication(_publication(APPLIED + 6, TASKS)), str(APPLIED + 7))
        read_bytes = Path.read_bytes

        def swapping(path: Path) -> bytes:
            raw = read_bytes(path)
            volume.write(b"next version", None)  # swapped in right after the assignment was read
            return raw

        monkeypatch.setattr(Path, "read_bytes", swapping)
        with contextlib.suppress(CorruptAssignment):
            publication = from_mounted_dir(volume.mount)
            raise AssertionError(f"generation {publication.generation} was paired with the next version")
