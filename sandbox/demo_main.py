"""The whole of `smoothscale demo`: start the sandbox, walk the steps, report, clean up (or keep it)."""

from __future__ import annotations

import signal
import threading
from pathlib import Path
from typing import TextIO

from .addresses import port_free
from .demo import ProgressView, Walkthrough, worker_env
from .harness import Sandbox
from .report import summary_table, timeline_png


def run_demo(
    output_dir: Path, out: TextIO, *, speed: float = 1.0, keep: bool = False, api_port: int = 0
) -> int:
    """0 when every step settled and no invariant broke, else 1. Every process it started is stopped before
    it returns (with `keep`, only once SIGINT or SIGTERM arrives)."""
    first_address = _first_free_block()
    with Sandbox(
        output_dir, worker_env=worker_env(speed), api_port=api_port, first_address=first_address
    ) as sandbox:
        assert sandbox.cluster is not None
        out.write(f"API server {sandbox.cluster.url}, kubeconfig {sandbox.kubeconfig}\n")
        walkthrough = Walkthrough(sandbox, view=ProgressView(out))
        results = walkthrough.run()
        png = timeline_png(walkthrough.timeline, results, output_dir / "timeline.png")
        violations = [f"{result.name}: {text}" for result in results for text in result.violations]
        out.write("\n" + summary_table(results) + "\n")
        out.write(f"\ntimeline: {png}\nrecords: {sandbox.record_file}\njournal: {sandbox.journal_file}\n")
        for line in violations:
            out.write(f"VIOLATION {line}\n")
        out.write("all invariants held\n" if not violations else f"{len(violations)} invariant(s) broken\n")
        if keep:
            _wait_for_a_signal(out, sandbox.kubeconfig)
    return 1 if violations else 0


def _wait_for_a_signal(out: TextIO, kubeconfig: Path) -> None:
    out.write(
        "\nThe sandbox keeps running. Try:\n"
        f"  export KUBECONFIG={kubeconfig}\n"
        "  kubectl get sapp orders\n"
        "  kubectl scale sapp orders --replicas=5\n"
        "  kubectl annotate pod orders-3 smoothscale.io/leaving=true\n"
        "Ctrl-C (or SIGTERM) stops every process of it.\n"
    )
    out.flush()
    stop = threading.Event()
    for signum in (signal.SIGINT, signal.SIGTERM):
        signal.signal(signum, lambda *_: stop.set())
    stop.wait()


def _first_free_block() -> str:
    """127.0.0.2 and up, as the docs show, unless another sandbox on this machine already serves there."""
    return "127.0.0.2" if port_free("127.0.0.2", 8080) else "127.0.100.2"
