"""Operator benchmark (issue "Operator core"): how fast it reacts, and what a steady fleet costs.

Against the API emulator, with pods faked in memory (the kubelet stand-in with `MemoryRuntime`) and the
operator as a real process (`smoothscale operator`), so that its CPU time and RSS are its own (read from
/proc: Linux only):

1. scale-up reaction: from a `replicas` change to the new pod existing and a published generation naming it
   (median of several scale-ups of one app; budget 2 s);
2. probing reaction: from a warmup's metrics first showing a lag within `acceptableRecoveryLag` to the first
   generation that acts on it (revokes the task from its old owner, or makes the warmup a standby or the
   active), with the operator scraping every `SCRAPE_INTERVAL` seconds (budget: that interval + 1 s);
3. steady state: 100 apps of 10 pods each (1,000 pods), all converged, scraped every second
   (`STEADY_SCRAPE_INTERVAL`, the issue's figure: 1,000 pod scrapes a second): the operator's CPU share
   (percent of one core) and RSS over a measurement window, with the scrapes the pods answered per second
   and the CPU per scrape; then 10 of the apps scale out by two pods each, and the operator's CPU share over
   the same window while they migrate. The pods and the API emulator share this process: on a loaded
   machine they may answer fewer than 1,000 scrapes a second (the operator waits on them), so the share at
   the full rate is also projected from the CPU per scrape.

The generations are observed by polling the ConfigMap every 20 ms, which bounds the timing resolution. The
last line is one JSON object of figures.

    python benchmarks/operator_bench.py            # everything (a few minutes)
    python benchmarks/operator_bench.py --quick    # fewer repeats, 20 apps
    python benchmarks/operator_bench.py --steady-only   # the steady state alone
    python benchmarks/operator_bench.py --quick --baseline main   # steady state, same-run A/B against main

With `--baseline <git-ref>` only the steady state runs, alternately by that commit's operator (its
packages but the sandbox's, `BASELINE_PACKAGES`, extracted under `.cache/<package>-baseline/<sha>/`, first
on the operator process's PYTHONPATH) and by the checkout's, `--rounds` times each, so that machine load
hits both sides alike; the last line gives both sides' figures, their medians and the ratio of the CPU per
pod scrape (below 1: cheaper now).
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import kubernetes
from baseline_tree import baseline_tree, worker_environment

from smoothscale.contract import shared_names as contract
from smoothscale.contract.configmap import from_configmap
from smoothscale.contract.publication import ClientAssignment, Publication
from smoothscale.sandbox.emulator import EmulatorThread, RunningEmulator, build_emulator
from smoothscale.sandbox.emulator.memoryruntime import MemoryRuntime, memory_kubelet

SCRAPE_INTERVAL = 1.0
STEADY_SCRAPE_INTERVAL = 1.0
ACCEPTABLE_LAG = 1_000
SCALED_APPS = 10
"""After the steady window, this many apps scale out from 10 to 12 pods: the CPU share over a window of
their migration (the issue's figure: at or below 10 % of a core)."""
BASELINE_PACKAGES = {
    "operator": "reconcile.py",
    "control": "pods.py",
    "contract": "publication.py",
    "resource": "spec.py",
    "assignor": "planner.py",
    "cli": "operator_command.py",
}
"""The packages `--baseline` takes from the reference commit, each with a file it holds."""
SMOOTHSCALE = str(Path(sys.executable).with_name("smoothscale"))
NAMESPACE = "default"
NOTHING = ClientAssignment()


def streamsapp(name: str, replicas: int, partitions: int, probing: str = "10m") -> dict[str, Any]:
    return {
        "apiVersion": contract.API_VERSION,
        "kind": contract.KIND,
        "metadata": {"name": name, "namespace": NAMESPACE},
        "spec": {
            "replicas": replicas,
            "template": {"spec": {"containers": [{"name": "app", "image": f"example/{name}:1"}]}},
            "topology": {"subtopologies": [{"name": "0", "partitions": partitions}]},
            "assignment": {
                "numStandbys": 1,
                "acceptableRecoveryLag": ACCEPTABLE_LAG,
                "maxWarmupReplicas": 4,
                "probingInterval": probing,
            },
        },
    }


@dataclass
class Cluster:
    running: RunningEmulator
    pods: MemoryRuntime
    core: Any
    custom: Any

    def apply(self, body: dict[str, Any]) -> None:
        self.custom.create_namespaced_custom_object(
            contract.GROUP, contract.VERSION, NAMESPACE, contract.PLURAL, body
        )

    def scale(self, app: str, replicas: int) -> None:
        patch = {"spec": {"replicas": replicas}}
        self.custom.patch_namespaced_custom_object(
            contract.GROUP, contract.VERSION, NAMESPACE, contract.PLURAL, app, patch
        )

    def publication(self, app: str) -> Publication | None:
        try:
            configmap = self.core.read_namespaced_config_map(f"{app}-assignment", NAMESPACE)
        except kubernetes.client.ApiException:
            return None
        return from_configmap(self.core.api_client.sanitize_for_serialization(configmap))

    def stable_apps(self) -> int:
        apps = self.custom.list_namespaced_custom_object(
            contract.GROUP, contract.VERSION, NAMESPACE, contract.PLURAL
        )
        stable = 0
        for app in apps["items"]:
            conditions = (app.get("status") or {}).get("conditions") or []
            if any(c["type"] == "Stable" and c["status"] == "True" for c in conditions):
                stable += 1
        return stable


@contextmanager
def cluster(tick: float, restore_rate: float) -> Iterator[Cluster]:
    """The emulator and the fake pods. A restore starts up to half a changelog short of the end (seeded
    jitter), so that warmups catch up at moments unrelated to the operator's scrapes."""
    with EmulatorThread(build_emulator(bookmark_interval=5.0)) as running:
        client = kubernetes.config.new_client_from_config(config_file=str(running.kubeconfig))
        fake = memory_kubelet(
            running, restore_rate=restore_rate, catch_up_lag=ACCEPTABLE_LAG, restore_jitter=0.5, tick=tick
        )
        with client, fake as pods:
            yield Cluster(
                running, pods, kubernetes.client.CoreV1Api(client), kubernetes.client.CustomObjectsApi(client)
            )


@contextmanager
def operator(
    running: RunningEmulator, scrape_interval: float, log: Path, sources: Sequence[Path] = ()
) -> Iterator[int]:
    """`smoothscale operator` as a process of its own, its `smoothscale.operator` and `smoothscale.control`
    from `sources` (`baseline_tree` folders) if given, else the checkout's; yields its pid."""
    command = [
        SMOOTHSCALE,
        "operator",
        f"--kubeconfig={running.kubeconfig}",
        "--standalone",
        f"--scrape-interval={scrape_interval}",
        "--metrics-host=127.0.0.1",
        "--metrics-port=0",
        "--no-journal-stdout",
    ]
    with log.open("ab") as output:
        process = subprocess.Popen(
            command, stdout=output, stderr=subprocess.STDOUT, env=worker_environment(*sources)
        )
    try:
        yield process.pid
    finally:
        process.terminate()
        try:
            process.wait(timeout=15)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


def wait_for(check: Callable[[], Any], timeout: float, interval: float = 0.02) -> Any:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = check()
        if value:
            return value
        time.sleep(interval)
    raise TimeoutError(f"gave up after {timeout}s")


def _stable(c: Cluster, app: str) -> bool:
    published = c.publication(app)
    if published is None or published.revoking or any(a.warmup for a in published.assignment.values()):
        return False
    return c.stable_apps() >= 1


class Generations:
    """Every generation of one app's ConfigMap, with the time this poller first saw it."""

    def __init__(self, c: Cluster, app: str) -> None:
        self.cluster, self.app = c, app
        self.history: list[tuple[float, Publication]] = []

    def poll(self) -> Publication | None:
        published = self.cluster.publication(self.app)
        if published is not None and (
            not self.history or self.history[-1][1].generation != published.generation
        ):
            self.history.append((time.time(), published))
        return published


def reactions(scale_ups: int, log: Path) -> dict[str, Any]:
    """Measurements 1 and 2 on one app scaled up `scale_ups` times, one pod at a time."""
    scale_times: list[float] = []
    promotions: list[float] = []
    with cluster(tick=0.02, restore_rate=50_000) as c, operator(c.running, SCRAPE_INTERVAL, log):
        c.apply(streamsapp("orders", replicas=3, partitions=24))
        wait_for(lambda: _stable(c, "orders"), timeout=60, interval=0.2)
        for replicas in range(4, 4 + scale_ups):
            delay, delays = _scale_up(c, replicas)
            scale_times.append(delay)
            promotions += delays
    return {
        "scale_up_to_generation_median_seconds": round(statistics.median(scale_times), 3),
        "scale_up_to_generation_max_seconds": round(max(scale_times), 3),
        "scale_up_samples": len(scale_times),
        "warmup_to_promotion_median_seconds": round(statistics.median(promotions), 3),
        "warmup_to_promotion_max_seconds": round(max(promotions), 3),
        "warmup_to_promotion_budget_seconds": SCRAPE_INTERVAL + 1.0,
        "warmup_samples": len(promotions),
        "scrape_interval_seconds": SCRAPE_INTERVAL,
    }


def _scale_up(c: Cluster, replicas: int) -> tuple[float, list[float]]:
    """One more pod: the delay to a generation naming it, and the warmups' delays to their promotion."""
    new_pod = f"orders-{replicas - 1}"
    generations = Generations(c, "orders")
    started = time.time()
    c.scale("orders", replicas)

    def names_new_pod() -> bool:
        published = generations.poll()
        return published is not None and new_pod in published.assignment

    wait_for(names_new_pod, timeout=30)
    delay = generations.history[-1][0] - started

    def settled() -> bool:
        generations.poll()
        return _stable(c, "orders")

    wait_for(settled, timeout=60)
    return delay, _promotion_delays(c.pods.pod(new_pod).caught_up, new_pod, generations.history)


def _promotion_delays(
    caught_up: dict[str, float], pod: str, history: list[tuple[float, Publication]]
) -> list[float]:
    """For each task the pod caught up on as a warmup: the delay to the first generation acting on it."""
    delays = []
    for task, at in caught_up.items():
        was_warmup = any(task in p.assignment.get(pod, NOTHING).warmup for t, p in history if t <= at)
        if not was_warmup:
            continue
        acted = next(
            (
                t
                for t, p in history
                if t >= at and (task in p.revoking or task not in p.assignment.get(pod, NOTHING).warmup)
            ),
            None,
        )
        if acted is not None:
            delays.append(acted - at)
    return delays


def steady_state(
    apps: int, window: float, log: Path, settle_timeout: float = 600.0, sources: Sequence[Path] = ()
) -> dict[str, Any]:
    """Measurement 3: `apps` apps of 10 pods, converged, scraped every `STEADY_SCRAPE_INTERVAL`, by the
    checkout's operator or the one of `sources`."""
    with (
        cluster(tick=0.5, restore_rate=1_000_000) as c,
        operator(c.running, STEADY_SCRAPE_INTERVAL, log, sources) as pid,
    ):
        started = time.monotonic()
        for index in range(apps):
            c.apply(streamsapp(f"app{index:03d}", replicas=10, partitions=20))
        try:
            wait_for(lambda: c.stable_apps() == apps, timeout=settle_timeout, interval=2.0)
        except TimeoutError as error:
            raise TimeoutError(
                f"{c.stable_apps()} of {apps} apps stable after {settle_timeout:.0f} s (--settle-timeout)"
            ) from error
        settle = time.monotonic() - started
        time.sleep(5.0)  # let the last status writes and probes pass
        print(f"steady window of {window:.0f} s starts: operator pid {pid}", file=sys.stderr, flush=True)
        cpu_before, wall_before, scrapes_before = _cpu_seconds(pid), time.monotonic(), c.pods.scrapes
        time.sleep(window)
        cpu, wall = _cpu_seconds(pid) - cpu_before, time.monotonic() - wall_before
        scrapes = c.pods.scrapes - scrapes_before
        rss = _rss_mb(pid)
        # then a scale-out of SCALED_APPS of them by two pods each, its warmups and hand-overs in the window
        print(f"scale-out window of {window:.0f} s starts: operator pid {pid}", file=sys.stderr, flush=True)
        cpu_before, wall_before, scrapes_before = _cpu_seconds(pid), time.monotonic(), c.pods.scrapes
        for index in range(min(SCALED_APPS, apps)):
            c.scale(f"app{index:03d}", 12)
        unstable_until = wall_before  # the last moment an app was seen not Stable
        while time.monotonic() - wall_before < window:
            if c.stable_apps() < apps:
                unstable_until = time.monotonic()
            time.sleep(0.5)
        scaling_cpu = _cpu_seconds(pid) - cpu_before
        scaling_wall = time.monotonic() - wall_before
        scaling_scrapes = c.pods.scrapes - scrapes_before
        violations = len(c.pods.violations)
    return {
        "steady_apps": apps,
        "steady_pods": apps * 10,
        "steady_settle_seconds": round(settle, 1),
        "steady_scrape_interval_seconds": STEADY_SCRAPE_INTERVAL,
        "steady_window_seconds": round(wall, 1),
        "steady_cpu_percent_of_core": round(100 * cpu / wall, 2),
        # below apps * 10 / interval: the pods (this process) or the operator could not keep up
        "steady_scrapes_per_second": round(scrapes / wall, 1),
        "steady_cpu_ms_per_pod_scrape": round(1000 * cpu / scrapes, 3) if scrapes else None,
        # what the CPU share would be if every pod were scraped every interval, at that cost per scrape
        "steady_cpu_percent_of_core_projected_full_rate": (
            round(100 * cpu / scrapes * apps * 10 / STEADY_SCRAPE_INTERVAL, 2) if scrapes else None
        ),
        "rss_mb": round(rss, 1),
        "scale_out_apps": min(SCALED_APPS, apps),
        "scale_out_cpu_percent_of_core": round(100 * scaling_cpu / scaling_wall, 2),
        # the pods' metrics reads (scrapes and hand-over polls) a second over the scale-out's window
        "scale_out_scrapes_per_second": round(scaling_scrapes / scaling_wall, 1),
        # when every app was Stable again, for good within the window (the window's length: not by then)
        "scale_out_stable_after_seconds": round(unstable_until - wall_before, 1),
        "load_average_1m": round(os.getloadavg()[0], 2),
        "violations": violations,
    }


def compare_steady(
    ref: str, rounds: int, apps: int, window: float, log: Path, settle_timeout: float
) -> dict[str, Any]:
    """The steady state, same run, by the operator at `ref` (before) and the checkout's (after), in
    alternating order (before first, then after first), `rounds` times each: the medians and their ratio."""
    # The whole operator as it was at `ref` (a module the checkout renamed since is no help to it); the
    # pods and the API emulator, in this process, are the checkout's.
    trees = [baseline_tree(ref, package, sentinel) for package, sentinel in BASELINE_PACKAGES.items()]
    sha = trees[0][0]
    runs: dict[str, list[dict[str, Any]]] = {"before": [], "after": []}
    for turn in range(rounds):
        sides: list[tuple[str, Sequence[Path]]] = [("before", [tree for _, tree in trees]), ("after", ())]
        for side, sources in sides if turn % 2 == 0 else sides[::-1]:
            figures = steady_state(apps, window, log, settle_timeout, sources)
            print(f"steady state, {side}: {figures}", flush=True)
            runs[side].append(figures)
    result: dict[str, Any] = {"baseline_commit": sha, "steady_apps": apps, "rounds": rounds}
    for key in (
        "steady_cpu_percent_of_core",
        "steady_cpu_ms_per_pod_scrape",
        "rss_mb",
        "scale_out_cpu_percent_of_core",
        "scale_out_scrapes_per_second",
        "scale_out_stable_after_seconds",
    ):
        for side in ("before", "after"):
            result[f"{side}_{key}"] = [r[key] for r in runs[side]]
            result[f"{side}_{key}_median"] = round(statistics.median(r[key] for r in runs[side]), 3)
    result["steady_cpu_ms_per_pod_scrape_after_over_before_ratio"] = round(
        result["after_steady_cpu_ms_per_pod_scrape_median"]
        / result["before_steady_cpu_ms_per_pod_scrape_median"],
        3,
    )
    result["load_average_1m"] = round(os.getloadavg()[0], 2)
    return result


def _cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    utime, stime = int(fields[11]), int(fields[12])  # fields 14 and 15 of proc(5), after pid and comm
    return (utime + stime) / os.sysconf("SC_CLK_TCK")


def _rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--quick", action="store_true", help="3 scale-ups, 20 apps, a 15 s window")
    parser.add_argument("--steady-only", action="store_true", help="only measurement 3, the steady state")
    parser.add_argument(
        "--settle-timeout",
        type=float,
        default=600.0,
        help="seconds the steady state's apps may take to converge (a loaded machine needs more)",
    )
    parser.add_argument(
        "--window",
        type=float,
        default=None,
        help="seconds the steady state is measured over (default 30, 15 with --quick; longer to profile it)",
    )
    parser.add_argument(
        "--baseline",
        metavar="GIT_REF",
        help="only the steady state, by the operator at this commit and the checkout's (same-run A/B)",
    )
    parser.add_argument("--rounds", type=int, default=2, help="A/B rounds with --baseline (default 2)")
    args = parser.parse_args()
    window = args.window if args.window is not None else 15.0 if args.quick else 30.0
    apps = 20 if args.quick else 100
    logging.basicConfig(level=logging.WARNING)
    with tempfile.TemporaryDirectory(prefix="operator-bench-") as tmp:
        log = Path(tmp) / "operator.log"
        if args.baseline:
            compared = compare_steady(args.baseline, args.rounds, apps, window, log, args.settle_timeout)
            print(json.dumps(compared))
            return
        figures = {} if args.steady_only else reactions(3 if args.quick else 7, log)
        print(f"reactions: {figures}", flush=True)
        steady = steady_state(apps, window, log, args.settle_timeout)
        print(f"steady state: {steady}", flush=True)
        figures.update(steady)
    print(json.dumps(figures))


if __name__ == "__main__":
    main()
