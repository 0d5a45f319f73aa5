"""The operator killed mid-migration and started again: it resumes from the ConfigMap, the pods and their
annotations, and no task moves twice or starts on two pods (the fake pods check the latter at every step)."""

from __future__ import annotations

import os
import signal
from collections import Counter
from pathlib import Path

from op_testkit import SMOOTHSCALE, Kubectl, balanced, operator_process, read_journal, streamsapp, wait_for

from smoothscale.sandbox.emulator import RunningEmulator
from smoothscale.sandbox.emulator.memoryruntime import MemoryRuntime


def smoothscale_operator(cluster: RunningEmulator, journal: Path) -> list[str]:
    return [
        SMOOTHSCALE,
        "operator",
        f"--kubeconfig={cluster.kubeconfig}",
        "--standalone",
        "--scrape-interval=0.2",
        "--scrape-timeout=0.5",
        "--debounce=0.05",
        "--metrics-host=127.0.0.1",
        "--metrics-port=0",
        f"--journal-file={journal}",
        "--no-journal-stdout",
    ]


def test_an_operator_killed_mid_hand_over_resumes_without_moving_a_task_twice(
    cluster: RunningEmulator, kube: Kubectl, fake: MemoryRuntime, tmp_path: Path
) -> None:
    journal, log = tmp_path / "journal.jsonl", tmp_path / "operator.log"
    with operator_process(smoothscale_operator(cluster, journal), log) as first:
        kube.apply(streamsapp(replicas=3, partitions=6))
        wait_for(lambda: balanced(kube.publication(), 3, 6), timeout=30, what="balance")
        wait_for(lambda: kube.condition("Stable").get("status") == "True", what="Stable")
        for name in ("orders-0", "orders-1", "orders-2"):
            fake.pod(name).hold = True  # the old owners are slow to let go of their tasks
        before_scaling = len(read_journal(journal))
        kube.patch_app("orders", {"spec": {"replicas": 5}})
        in_flight = wait_for(
            lambda: (p := kube.publication()) is not None and p.revoking and p, timeout=30, what="a hand-over"
        )
        os.kill(first.pid, signal.SIGKILL)
        first.wait(timeout=10)

    for name in ("orders-0", "orders-1", "orders-2"):
        fake.pod(name).hold = False
    with operator_process(smoothscale_operator(cluster, journal), log):
        wait_for(
            lambda: balanced(kube.publication(), 5, 6), timeout=30, what="balance on 5 after the restart"
        )
        wait_for(lambda: kube.condition("Stable").get("status") == "True", what="Stable")

    generations = fake.generations("orders")
    assert generations == sorted(set(generations)), "generations only grow, across the restart"
    assert kube.publication().generation > in_flight.generation
    records = read_journal(journal)[before_scaling:]
    moves = Counter(m["task"] for r in records if r["kind"] == "publication" for m in r["moves"])
    assert moves and max(moves.values()) == 1, moves
    assert [r["reason"] for r in records if r["kind"] == "plan"].count("FirstPlan") == 1, "the restart's"
