"""Several operator replicas: kopf's peering lets only the one with the highest priority act."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from kopf.testing import KopfRunner
from op_testkit import Kubectl, balanced, read_journal, streamsapp, wait_for

from smoothscale.operator.config import OperatorConfig
from smoothscale.operator.context import OperatorContext
from smoothscale.operator.main import build_registry
from smoothscale.sandbox.emulator import EmulatorThread, RunningEmulator, build_emulator
from smoothscale.sandbox.emulator.memoryruntime import MemoryRuntime


@pytest.fixture()
def cluster() -> Iterator[RunningEmulator]:
    """The emulator with kopf's peering kinds, and the cluster-wide peering object the chart installs."""
    emulator = build_emulator(peering=True, bookmark_interval=0.5)
    emulator.create_object("kopf.dev/v1/clusterkopfpeerings", {"metadata": {"name": "smoothscale"}})
    with EmulatorThread(emulator) as served:
        yield served


def _replica(config: OperatorConfig, priority: int) -> KopfRunner:
    registry = build_registry(OperatorContext(config))
    args = ["run", "-A", "--peering=smoothscale", f"--priority={priority}"]
    return KopfRunner(args, registry=registry, timeout=30)


def _peers(kube: Kubectl) -> dict[str, object]:
    peering = kube.custom.get_cluster_custom_object("kopf.dev", "v1", "clusterkopfpeerings", "smoothscale")
    return dict(peering.get("status") or {})


def _published(journal: Path) -> bool:
    return any(record["kind"] == "publication" for record in read_journal(journal))


def test_only_the_replica_with_the_highest_priority_acts(
    kube: Kubectl, fake: MemoryRuntime, operator_config: OperatorConfig, tmp_path: Path
) -> None:
    low_journal, high_journal = tmp_path / "low.jsonl", tmp_path / "high.jsonl"
    low = operator_config.model_copy(update={"standalone": False, "journal_file": low_journal})
    high = operator_config.model_copy(update={"standalone": False, "journal_file": high_journal})
    with _replica(low, priority=10):
        with _replica(high, priority=20):
            wait_for(lambda: len(_peers(kube)) == 2, what="both replicas in the peering object")
            kube.apply(streamsapp(replicas=2, partitions=4))
            wait_for(lambda: balanced(kube.publication(), 2, 4), timeout=30, what="balance")
            # the journal's record follows the write it records: a loaded machine may read between them
            wait_for(lambda: _published(high_journal), what="the publication in the acting replica's journal")
            assert read_journal(low_journal) == [], "the paused replica did nothing"
        # The active replica is gone: the other one takes over the app.
        kube.patch_app("orders", {"spec": {"replicas": 3}})
        wait_for(lambda: balanced(kube.publication(), 3, 4), timeout=30, what="balance after fail-over")
        wait_for(lambda: _published(low_journal), what="the publication in the other replica's journal")
