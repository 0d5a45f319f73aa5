"""`smoothscale demo`: a StreamsApp on the sandbox, walked through scale-out, scale-in, a host swap, a pod
crash and (an app with a lease) a zone's outage, with a live view, invariants checked from the workers'
records, a summary and a PNG timeline.

Each step changes one thing, then waits until the app has settled (`Snapshot.settled`): the operator
stable, every pod ready, on the same revision and on the published generation. The rates are chosen so that
the whole walk takes about a minute and a half at `speed=1`: a warmup restores a changelog in a few seconds.
"""

from __future__ import annotations

import sys
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, TextIO

from smoothscale.contract import shared_names as contract

from . import environment as env
from . import invariants
from .harness import Sandbox
from .observe import GroupView, Migration, PodReports, PodView, Snapshot, processing_intervals, settle
from .records import handovers, longest_gaps

APP = "orders"
NO_PUBLICATION = "no_publication"
"""The bridge's fallback reason when nothing is published (`FallbackReason`)."""
NAMESPACE = "default"
PARTITIONS = 6
"""Per subtopology: 12 tasks, 6 of them stateful."""
LEASE_SECONDS = 6.0
"""The embedded demo's pods' lease (`spec.failover.leaseSeconds`): as short as Kafka's shortest session, so
that the zone outage's fail-over shows within the walk."""
FAILOVER_MARGIN = 5.0
"""Issue 40's bound for a step that loses pods: no task unprocessed longer than the lease plus this."""


def demo_app(
    replicas: int = 3,
    image: str = "example/orders:1",
    kafka: Mapping[str, Any] | None = None,
    lease_seconds: float | None = None,
) -> dict[str, Any]:
    """The example app: 2 subtopologies (a stateless one, a stateful one), 1 standby, a volume per pod;
    with `kafka` (a `spec.kafka`), the operator reads racks, changelogs and the group from that cluster; with
    `lease_seconds`, its pods hold leases and a lost pod's actives fail over once its lease has run out."""
    app: dict[str, Any] = {
        "apiVersion": contract.API_VERSION,
        "kind": contract.KIND,
        "metadata": {"name": APP, "namespace": NAMESPACE},
        "spec": {
            "replicas": replicas,
            "template": {"spec": {"containers": [{"name": "app", "image": image}]}},
            "topology": {
                "subtopologies": [
                    {"name": "0", "partitions": PARTITIONS, "stateful": False, "inputTopics": ["orders"]},
                    {
                        "name": "1",
                        "partitions": PARTITIONS,
                        "stateful": True,
                        "inputTopics": ["orders-by-customer"],
                    },
                ]
            },
            "assignment": {
                "numStandbys": 1,
                "acceptableRecoveryLag": 2_000,
                "maxWarmupReplicas": 2,
                "probingInterval": "5s",
            },
            "scaling": {"scaleDownTimeout": "2m", "updateStrategy": "Swap", "maxSurge": "100%"},
            "storage": {"size": "1Gi"},
            "metrics": {"port": 8080, "path": "/metrics"},
        },
    }
    if kafka is not None:
        app["spec"]["kafka"] = dict(kafka)
    if lease_seconds is not None:
        app["spec"]["failover"] = {"leaseSeconds": lease_seconds}
    return app


def demo_tasks() -> list[str]:
    return [f"{sub}_{partition}" for sub in ("0", "1") for partition in range(PARTITIONS)]


def worker_env(speed: float) -> dict[str, str]:
    """Every changelog starts with 30,000 records and grows by 100 a second; a replica restores 4,000 a
    second times `speed`: a new warmup catches up in about 8 s at speed 1."""
    return {
        env.INITIAL_OFFSET_ENV: "30000",
        env.INPUT_RATE_ENV: "100",
        env.RESTORE_RATE_ENV: str(4_000 * speed),
        env.PROCESS_RATE_ENV: "1000",
    }


@dataclass
class MigrationSeen:
    """One migration as the demo's snapshots saw it in the app's status (epoch seconds): when it started, its
    records, the first ETA it got (what the timeline marks), each snapshot's (time, percent, ETA), and when
    the status stopped showing it (None: it had not ended when the step did)."""

    started: float
    records: int = 0
    first_eta: float | None = None
    samples: list[tuple[float, float, float | None]] = field(default_factory=list)
    ended: float | None = None

    def seen(self, at: float, migration: Migration) -> None:
        self.records = max(self.records, migration.records)
        self.first_eta = self.first_eta or migration.first_eta
        self.samples.append((at, migration.percent, migration.eta))


@dataclass
class StepResult:
    name: str
    description: str
    started: float
    settled: float | None = None
    first_generation: int = 0
    last_generation: int = 0
    max_warmups: int = 0
    worst_gap: float = 0.0
    handover_gaps: list[float] = field(default_factory=list)
    """Seconds each moved task went unprocessed between its old and its new owner."""
    violations: list[str] = field(default_factory=list)
    fallbacks: dict[str, int] = field(default_factory=dict)
    """The bridge's fallbacks counted during the step, by reason (Kafka Streams pods)."""
    failovers: int = 0
    """Rebalances led during the step with the plan except for the actives of pods gone from the group,
    which ran where their most caught-up copy was (Kafka Streams pods): what a crash calls for."""
    before_first_plan: int = 0
    """Rebalances led with nothing published yet (`no_publication`) while the app was being created: the
    operator plans once a pod has reported the topology, so these precede any plan and are no fallback from
    one."""
    plan_matches_kafka: bool | None = None
    """At the step's end, whether Kafka's view of the group was the published plan (None: not read)."""
    balanced: bool | None = None
    """At the step's end, whether the published actives were balanced over the pods and the zones."""
    migrations: list[MigrationSeen] = field(default_factory=list)
    """The migrations the app's status showed during the step, with the ETA of each snapshot."""

    @property
    def seconds(self) -> float | None:
        return None if self.settled is None else self.settled - self.started


@dataclass
class _Step:
    name: str
    description: str
    act: Callable[[], Any]
    done: Callable[[Snapshot], bool] = lambda _: True
    gap_checked: bool = True
    creates: bool = False
    max_gap: float | None = None
    """The step's own bound on a task's unprocessed time (None: the walk's)."""


class _Outage:
    """Every pod of one zone stopped (SIGSTOP: listed, its volume kept, silent, as on a node cut off) for
    `seconds`, then continued, by a timer: the walk keeps sampling (and the live view keeps showing the
    fail-over) while they are stopped. `over` is the step's `done`."""

    def __init__(self, sandbox: Sandbox, last: Callable[[], Snapshot], seconds: float) -> None:
        """`last` gives the walk's latest snapshot, which says each pod's zone (its node's)."""
        self._sandbox = sandbox
        self._last = last
        self._seconds = seconds
        self._back = threading.Event()

    def start(self) -> None:
        kubelet = self._sandbox.kubelet
        assert kubelet is not None
        pods = sorted(self._last().pods, key=lambda pod: _ordinal(pod.name))
        stopped = [pod.name for pod in pods if pod.zone == pods[0].zone]
        for pod in stopped:
            kubelet.freeze(pod, NAMESPACE)

        def back() -> None:
            for pod in stopped:
                kubelet.freeze(pod, NAMESPACE, frozen=False)
            self._back.set()

        timer = threading.Timer(self._seconds, back)
        timer.daemon = True
        timer.start()

    def over(self, _: Snapshot) -> bool:
        """Whether the zone's pods go on again."""
        return self._back.is_set()


def _ordinal(pod: str) -> int:
    return int(pod.rsplit("-", 1)[1])


class Walkthrough:
    """Runs the steps on a started sandbox; `timeline` keeps every snapshot for the report."""

    def __init__(
        self,
        sandbox: Sandbox,
        *,
        view: Callable[[Snapshot, int, int, str], None],
        step_timeout: float = 90.0,
        max_gap: float = 20.0,
        sample_seconds: float = 1.0,
        app: Mapping[str, Any] | None = None,
        records: bool = True,
        group_view: GroupView | None = None,
        reports: PodReports | None = None,
    ) -> None:
        """`app` is the StreamsApp to walk (`demo_app()` unless given); `records` says whether its pods write
        the sample workers' records, from which the processing gaps and a crashed pod's rebuilt state are
        judged (Kafka Streams pods do not: their gaps and hand-overs are judged from the snapshots, and
        `demo_kafka` checks their output); `group_view` reads Kafka's view of the group at each snapshot;
        `reports`, when given, what each pod runs instead of its metrics endpoint (pods on the streams
        protocol serve none)."""
        self.sandbox = sandbox
        self._app = dict(app or demo_app())
        self.name = str(self._app["metadata"]["name"])
        """The StreamsApp's name: `orders`, or a user's own app's (`demo --app-name`)."""
        lease = (self._app["spec"].get("failover") or {}).get("leaseSeconds")
        self._lease: float | None = None if lease is None else float(lease)
        self._records = records
        self.timeline: list[Snapshot] = []
        self._view = view
        self._step_timeout = step_timeout
        self._max_gap = max_gap
        self._sample_seconds = sample_seconds
        self._crash: tuple[str, float] | None = None
        self._group_view = group_view
        self._reports = reports
        self._counters_seen: dict[tuple[str, str], int] = {}

    def run(self) -> list[StepResult]:
        steps = self._steps()
        results: list[StepResult] = []
        for number, step in enumerate(steps, start=1):
            result = StepResult(step.name, step.description, started=time.time())
            step.act()
            result.settled = self._wait(step, number, len(steps), result)
            results.append(result)
            if result.settled is None:
                result.violations.append(f"did not settle within {self._step_timeout:.0f} s")
                break
        self._check(results, [step for step in steps if step.gap_checked])
        return results

    def _steps(self) -> list[_Step]:
        sandbox = self.sandbox

        def scale(replicas: int) -> Callable[[], None]:
            return lambda: sandbox.patch_app(self.name, {"spec": {"replicas": replicas}})

        def swap() -> None:
            # The app's own container with a new image: a list in a merge patch replaces the whole list.
            containers = self._app["spec"]["template"]["spec"]["containers"]
            template = {"spec": {"containers": [{**containers[0], "image": "example/orders:2"}]}}
            sandbox.patch_app(self.name, {"spec": {"template": template}})

        def crash() -> None:
            assert sandbox.kubelet is not None
            pod = f"{self.name}-{min(_ordinal(p['metadata']['name']) for p in sandbox.pods(self.name))}"
            sandbox.kubelet.crash(pod, NAMESPACE)
            self._crash = (pod, time.time())

        def restarted(snapshot: Snapshot) -> bool:
            assert sandbox.kubelet is not None and self._crash is not None
            return f"{NAMESPACE}/{self._crash[0]}" in sandbox.kubelet.worker_pids()

        # With a lease, a lost pod's tasks wait at most for its lease to run out and a hand-over.
        lease = self._lease
        lost_pod_bound = None if lease is None else lease + FAILOVER_MARGIN
        steps = [
            _Step(
                "create",
                "apply the StreamsApp: 3 pods over 3 zones",
                lambda: sandbox.apply(self._app),
                gap_checked=False,
                creates=True,
            ),
            _Step("scale-out", "3 -> 6 pods: warmups restore first, then tasks move", scale(6)),
            _Step("scale-in", "6 -> 3 pods: leaving pods hand their tasks back first", scale(3)),
            _Step("host-swap", "new pod template (Swap): 3 new pods, then the old ones retire", swap),
            _Step(
                "pod-crash",
                "kill one worker (its volume survives): it restarts and restores",
                crash,
                restarted,
                max_gap=lost_pod_bound,
            ),
        ]
        if lease is not None:
            outage = _Outage(sandbox, lambda: self.timeline[-1], 2 * lease)
            steps.append(
                _Step(
                    "zone-outage",
                    f"stop every pod of one zone for {2 * lease:.0f} s: standbys elsewhere take over "
                    "once the lease ends",
                    outage.start,
                    # back, the zone's pods hold nothing until warmups and probing give them their share
                    lambda snapshot: outage.over(snapshot) and self._balanced(snapshot),
                    max_gap=lost_pod_bound,
                )
            )
        return steps

    def _wait(self, step: _Step, number: int, total: int, result: StepResult) -> float | None:
        def seen(snapshot: Snapshot) -> None:
            self.timeline.append(snapshot)
            self._view(snapshot, number, total, step.description)
            result.first_generation = result.first_generation or snapshot.generation
            result.last_generation = snapshot.generation
            result.max_warmups = max(result.max_warmups, snapshot.warmups)
            self._count_fallbacks(snapshot, result, creating=step.creates)
            _follow_migration(snapshot, result.migrations)

        settled = settle(
            self.sandbox,
            self.name,
            step.name,
            timeout=self._step_timeout,
            also=lambda snapshot: (
                step.done(snapshot) and (self._group_view is None or self._balanced(snapshot))
            ),
            on_snapshot=seen,
            sample_seconds=self._sample_seconds,
            group_view=self._group_view,
            reports=self._reports,
        )
        last = self.timeline[-1]
        result.plan_matches_kafka = last.plan_matches_kafka
        result.balanced = self._balanced(last)
        return None if settled is None else settled.at

    def _balanced(self, snapshot: Snapshot) -> bool:
        """Whether the published actives are balanced over the snapshot's pods (those not leaving) and their
        zones. A Kafka walk's step (`group_view`: it fails when it ends unbalanced, `report.step_failures`)
        settles only so: new pods that are ready and hold nothing yet, before the operator has planned for
        them, look settled otherwise (pods on the streams protocol are ready within seconds)."""
        zone_of = {pod.name: pod.zone for pod in snapshot.pods if not pod.leaving}
        return not invariants.imbalance(self.sandbox.publication(self.name), zone_of)

    def _count_fallbacks(self, snapshot: Snapshot, result: StepResult, *, creating: bool) -> None:
        """Add what each pod's fallback and fail-over counters rose by since the last snapshot."""
        for pod in snapshot.pods:
            for reason, value in pod.fallbacks.items():
                rise = self._rise(pod.name, reason, value)
                if creating and reason == NO_PUBLICATION:
                    result.before_first_plan += rise
                elif rise:
                    result.fallbacks[reason] = result.fallbacks.get(reason, 0) + rise
            result.failovers += self._rise(pod.name, "", pod.failovers)

    def _rise(self, pod: str, counter: str, value: int) -> int:
        """What one counter of a pod rose by since the last snapshot (a counter lower than before is a new
        process of the pod, which counted from 0; a pod seen for the first time too)."""
        before = self._counters_seen.get((pod, counter), 0)
        self._counters_seen[pod, counter] = value
        return value - before if value >= before else value

    def _check(self, results: list[StepResult], gap_checked: Sequence[_Step]) -> None:
        tasks = list(self.timeline[-1].tasks) if self.timeline and self.timeline[-1].tasks else demo_tasks()
        final = results[-1]
        if self._records:
            self._check_records(results, gap_checked)
        else:
            self._check_snapshots(results, gap_checked, tasks)
        if all(result.settled is not None for result in results):
            publication = self.sandbox.publication(self.name)
            zone_of = {pod.name: pod.zone for pod in self.timeline[-1].pods}
            final.violations += invariants.imbalance(publication, zone_of)
            final.violations += invariants.every_task_once(publication, tasks)

    def _check_snapshots(
        self, results: list[StepResult], gap_checked: Sequence[_Step], tasks: Sequence[str]
    ) -> None:
        """Gaps and hand-overs from the snapshots (`observe.processing_intervals`), for pods that write no
        records: coarser (a snapshot a second), the same judgement."""
        intervals = processing_intervals(self.timeline)
        bound = self._bounds(gap_checked)
        for result in results:
            if result.name in bound and result.settled is not None:
                gaps = longest_gaps(intervals, tasks, result.started, result.settled)
                result.worst_gap = max(gaps.values(), default=0.0)
                handed = handovers(intervals, result.started, result.settled)
                result.handover_gaps = [handover.gap for handover in handed]
                result.violations += invariants.gaps_beyond(gaps, bound[result.name])

    def _check_records(self, results: list[StepResult], gap_checked: Sequence[_Step]) -> None:
        """From the workers' records: no task unprocessed longer than `max_gap` in a step, the crashed pod
        rebuilt its state, and no task ever processed by two pods at once."""
        records = self.sandbox.records()
        tasks = demo_tasks()
        bound = self._bounds(gap_checked)
        for result in results:
            if result.name in bound and result.settled is not None:
                gaps = invariants.unprocessed_seconds(records, tasks, result.started, result.settled + 2.0)
                result.worst_gap = max(gaps.values())
                result.handover_gaps = invariants.handover_gaps(records, result.started, result.settled + 2.0)
                result.violations += invariants.gaps_beyond(gaps, bound[result.name])
        crashed = next((result for result in results if result.name == "pod-crash"), None)
        if self._crash is not None and crashed is not None:
            pod, since = self._crash
            crashed.violations += invariants.rebuilt_state(records, pod, since)
        results[-1].violations += invariants.concurrent_processing(records)

    def _bounds(self, gap_checked: Sequence[_Step]) -> dict[str, float]:
        """Each checked step's bound on a task's unprocessed time."""
        return {step.name: self._max_gap if step.max_gap is None else step.max_gap for step in gap_checked}


def _follow_migration(snapshot: Snapshot, migrations: list[MigrationSeen]) -> None:
    """Add what this snapshot's status shows of the migration in progress (or that it has ended)."""
    last = migrations[-1] if migrations else None
    shown = snapshot.migration
    if last is not None and last.ended is None and (shown is None or shown.started != last.started):
        last.ended = snapshot.at
    if shown is None:
        return
    if last is None or last.started != shown.started:
        last = MigrationSeen(shown.started)
        migrations.append(last)
    last.seen(snapshot.at, shown)


_COLUMNS = f"{'pod':<10} {'zone':<7} {'ready':<5} {'act':>3} {'stb':>3} {'wrm':>3} {'lag':>8} {'gen':>4}"


def _row(pod: PodView) -> str:
    ready = ("yes" if pod.ready else "no") + ("*" if pod.leaving else "")
    generation = "-" if pod.generation is None else str(pod.generation)
    return (
        f"{pod.name:<10} {pod.zone:<7} {ready:<5} {pod.active:>3} {pod.standby:>3} {pod.warmup:>3} "
        f"{pod.lag:>8} {generation:>4}"
    )


def _eta(snapshot: Snapshot) -> str:
    migration = snapshot.migration
    if migration is None:
        return ""
    left = "?" if migration.eta is None else f"{max(migration.eta - snapshot.at, 0.0):.0f} s"
    return f" | migration {migration.percent:.0f}%, ETA in {left}"


class ProgressView:
    """The live view: redrawn in place on a terminal, one line per change otherwise (logs, CI)."""

    def __init__(self, out: TextIO = sys.stdout) -> None:
        self._out = out
        self._tty = out.isatty()
        self._last: tuple[Any, ...] | None = None

    def __call__(self, snapshot: Snapshot, number: int, total: int, description: str) -> None:
        state = "settled" if snapshot.settled else ("migrating" if snapshot.migrating else "working")
        probe = f" | next probe {snapshot.next_probe}" if snapshot.next_probe else ""
        summary = (
            f"generation {snapshot.generation} | ready {snapshot.ready}/{snapshot.replicas} | {state}"
            f" | warmups {snapshot.warmups} | lag {snapshot.total_lag}{_eta(snapshot)}{probe}"
        )
        if self._tty:
            lines = [f"step {number}/{total} {snapshot.step}: {description}", summary, "", _COLUMNS]
            lines += [_row(pod) for pod in snapshot.pods]
            lines.append("(* leaving or terminating)")
            self._out.write("\x1b[H\x1b[J" + "\n".join(lines) + "\n")
        else:
            key = (snapshot.step, snapshot.generation, snapshot.ready, state, snapshot.warmups)
            if key != self._last:
                pods = " ".join(f"{p.name}={p.active}/{p.standby}/{p.warmup}" for p in snapshot.pods)
                self._out.write(f"[{snapshot.step}] {summary} | act/stb/wrm {pods}\n")
                self._last = key
        self._out.flush()
