"""Releases side by side under running apps (issue 34): the previous release's client library in every pod
under this operator, and this client library under the previous release's operator, each through a
scale-out and a host swap with real worker processes, the emulated API server and the usual invariants (no
task processed on two pods at once, no task unprocessed beyond a planned move's bound, every task once in the
last publication); and a rolling update of a two-replica operator from the previous release to this one in
the middle of a scale-out's hand-over.

"Previous" is `FIRST_VERSIONED` (tests/versions_testkit.py): the first commit on main whose
publications carry a contract version and whose readers accept what they do not know. It is the oldest
release a later one must keep working with; the commit before it refuses any added field by design (the
fault issue 34 fixed), so pairing with it would test nothing a release can promise. Each side's packages are
that commit's (`versions_testkit.RELEASE_PACKAGES`), extracted by `benchmarks/baseline_tree.py` and put
first on the PYTHONPATH of the processes that run them (the workers, or the operator); the rest of the
sandbox is this checkout's."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path
from typing import Any

import pytest
from sandbox_e2e_kit import PLANNED_MOVE_BOUND, Run
from versions_testkit import FIRST_VERSIONED, release_path

from smoothscale.contract.publication import Publication
from smoothscale.sandbox.addresses import random_block
from smoothscale.sandbox.demo import APP, worker_env
from smoothscale.sandbox.harness import Sandbox

pytestmark = pytest.mark.slow

REPOSITORY = Path(__file__).resolve().parents[2]


def _scale_out_and_swap(sandbox: Sandbox) -> None:
    run = Run(sandbox)
    before = {pod.revision for pod in run.start(replicas=2).pods}
    out = run.step("scale-out", PLANNED_MOVE_BOUND, lambda: sandbox.patch_app(APP, {"spec": {"replicas": 3}}))
    assert len(out.pods) == 3
    template = {"spec": {"containers": [{"name": "app", "image": "example/orders:2"}]}}
    swapped = run.step(
        "swap", PLANNED_MOVE_BOUND, lambda: sandbox.patch_app(APP, {"spec": {"template": template}})
    )
    assert before.isdisjoint(pod.revision for pod in swapped.pods)
    run.finish(swapped)


def _environ(pid: int) -> dict[str, str]:
    pairs = Path(f"/proc/{pid}/environ").read_bytes().split(b"\0")
    return dict(pair.decode().split("=", 1) for pair in pairs if b"=" in pair)


def test_previous_client_library_under_this_operator(tmp_path: Path) -> None:
    previous = release_path(FIRST_VERSIONED)
    with Sandbox(
        tmp_path, worker_env={**worker_env(speed=2.0), "PYTHONPATH": previous}, first_address=random_block()
    ) as sandbox:
        _scale_out_and_swap(sandbox)


def test_this_client_library_under_the_previous_operator(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PYTHONPATH", release_path(FIRST_VERSIONED))
    this = os.pathsep.join([str(REPOSITORY / "src"), os.environ.get("PYTHONPATH", "")])
    with Sandbox(
        tmp_path, worker_env={**worker_env(speed=2.0), "PYTHONPATH": this}, first_address=random_block()
    ) as sandbox:
        operator = sandbox.operator
        assert operator is not None
        assert _environ(operator.pid)["PYTHONPATH"].startswith(str(REPOSITORY / ".cache"))
        _scale_out_and_swap(sandbox)


def _hold_a_hand_over(sandbox: Sandbox, timeout: float = 60) -> str:
    """Catch a published generation that revokes a task (a hand-over waiting for the old owner to let go)
    and SIGSTOP that owner: until it is let go on (`kubelet.freeze(pod, frozen=False)`), the operator cannot
    read that it let go, and the hand-over stays pending whatever operator runs. The pod."""
    kubelet = sandbox.kubelet
    assert kubelet is not None
    deadline = time.time() + timeout
    while time.time() < deadline:
        published = sandbox.publication(APP)
        if published is not None and published.revoking:
            owner = next(iter(published.revoking.values())).owner
            kubelet.freeze(owner)
            time.sleep(0.5)  # had the operator read it let go before the freeze, the hand-over ends now
            if _waits_for(sandbox.publication(APP), owner):
                return owner
            kubelet.freeze(owner, frozen=False)  # too late for this one: the next
        time.sleep(0.02)
    raise AssertionError(f"no hand-over caught pending within {timeout} s")


def _waits_for(publication: Publication | None, owner: str) -> bool:
    return publication is not None and any(r.owner == owner for r in publication.revoking.values())


def _published(journal: Path) -> list[dict[str, Any]]:
    lines = journal.read_text().splitlines() if journal.exists() else []
    return [record for line in lines if (record := json.loads(line))["kind"] == "publication"]


def test_a_rolling_update_of_two_peered_operators_in_the_middle_of_a_hand_over(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The chart's rolling update of a peered two-replica operator (maxSurge 1, maxUnavailable 0) from the
    previous release to this one in the middle of a scale-out, a hand-over pending (its old owner held
    frozen so that it cannot let go before the switch): a new replica joins below the acting old one, the
    other old one goes, a second new one joins above it and takes over, the last old one goes. The hand-over
    the old release began, the new one finishes, and the migration with it: nothing processed on two pods
    at once, no task unprocessed longer than a planned move's bound plus the hold, every task once and
    balanced."""
    this = {"PYTHONPATH": os.pathsep.join([str(REPOSITORY / "src"), os.environ.get("PYTHONPATH", "")])}
    monkeypatch.setenv(
        "PYTHONPATH", release_path(FIRST_VERSIONED)
    )  # the sandbox's operator, a replica's default
    with Sandbox(
        tmp_path,
        worker_env={**worker_env(speed=2.0), "PYTHONPATH": this["PYTHONPATH"]},
        first_address=random_block(),
        operator_priority=100,
    ) as sandbox:
        kubelet = sandbox.kubelet
        assert kubelet is not None
        sandbox.start_replica("old-b", priority=50)
        run = Run(sandbox)
        run.start(replicas=3)
        started = time.time()
        sandbox.patch_app(APP, {"spec": {"replicas": 6}})
        held = _hold_a_hand_over(sandbox)
        frozen = time.time()
        sandbox.start_replica("new-c", priority=80, env=this)  # stands by: the old one acts
        sandbox.stop_replica("old-b")
        sandbox.start_replica("new-d", priority=150, env=this)  # the highest: it acts, the old one pauses
        new = tmp_path / "journal-new-d.jsonl"
        while not new.exists() or not new.stat().st_size:
            assert time.time() < frozen + 60, "the new replica wrote nothing"
            time.sleep(0.1)
        sandbox.stop_operator()  # the last old replica goes
        kubelet.freeze(held, frozen=False)
        run.finish_held_up("upgraded", 6, started, time.time() - frozen)
    old, ours = _published(tmp_path / "journal.jsonl"), _published(new)
    assert any(r["owner"] == held for r in old[-1]["revoking"].values()), (
        "the old release's last generation waited for the held pod to let go"
    )
    assert ours[0]["generation"] == old[-1]["generation"] + 1, "the new release went on from it"
    assert not _published(tmp_path / "journal-new-c.jsonl"), "the replica below the acting one stood by"
