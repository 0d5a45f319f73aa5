"""The operator's two entry points as real processes: `smoothscale operator` and `kopf run -m`."""

from __future__ import annotations

import os
import signal
import sys
from pathlib import Path

from op_testkit import Kubectl, balanced, operator_process, streamsapp, wait_for

from smoothscale.sandbox.emulator import RunningEmulator
from smoothscale.sandbox.emulator.memoryruntime import MemoryRuntime

KOPF = str(Path(sys.executable).with_name("kopf"))


def test_kopf_run_with_the_entry_module_runs_the_operator_from_environment_settings(
    cluster: RunningEmulator, kube: Kubectl, fake: MemoryRuntime, tmp_path: Path
) -> None:
    env = {
        **os.environ,
        "SMOOTHSCALE_KUBECONFIG": str(cluster.kubeconfig),
        "SMOOTHSCALE_SCRAPE_INTERVAL": "0.2",
        "SMOOTHSCALE_DEBOUNCE": "0.05",
        "SMOOTHSCALE_METRICS_HOST": "127.0.0.1",
        "SMOOTHSCALE_METRICS_PORT": "0",
        "SMOOTHSCALE_JOURNAL_FILE": str(tmp_path / "journal.jsonl"),
        "SMOOTHSCALE_JOURNAL_STDOUT": "false",
    }
    command = [KOPF, "run", "-m", "smoothscale.operator.entry", "--standalone", "-A"]
    with operator_process(command, tmp_path / "operator.log", env=env) as process:
        kube.apply(streamsapp(replicas=2, partitions=4))
        # A cold operator process (kopf, OR-Tools, a first solve) may take most of a minute under load.
        wait_for(lambda: balanced(kube.publication(), 2, 4), timeout=90, what="balance")
        os.kill(process.pid, signal.SIGTERM)
        assert process.wait(timeout=15) == 0, (tmp_path / "operator.log").read_text()[-2000:]
    assert (tmp_path / "journal.jsonl").read_text().count('"kind":"publication"') >= 1
