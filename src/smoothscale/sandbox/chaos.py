"""Chaos over the sandbox: a seeded random sequence of faults and changes, and the invariants after each.

The events (`KINDS`): a pod's worker killed (its volume kept); the operator killed and started again a few
seconds later; the API server answering 409 or 500 to the next few requests, or holding them for a while;
a worker frozen (SIGSTOP: its metrics endpoint hangs, it processes nothing, it renews no lease) for a few
seconds; a pod cut off from the API server (every request it sends fails: it cannot renew its lease nor read
its assignment, but it runs, and the operator still scrapes it) for up to two leases; a pod cut off from
the operator (its metrics endpoint closed: it runs and renews its lease) as long; a zone lost (its
workers killed, nothing runs there) and restored a few seconds later; the replica count changed; a pod
drained; the pod template changed (a host swap of every pod). Events come every `pause` seconds, without
waiting for the app to settle, so faults pile up on migrations in flight. With `lease_seconds` the app has a
lease (`spec.failover.leaseSeconds`): frozen, cut-off and lost pods' actives fail over once it expires, and
the pods fence themselves before it does (docs/failover.md).

After every event: no task processed by two processes at once (the workers' records) and no task active on
two pods in the published assignment. Once the events stop, every fault is healed and the app must settle;
then: every task processed again within `recovery_bound` seconds of the faults stopping, the final
assignment stable, every task active exactly once, balanced over pods (and over zones unless a zone was
lost: pods created during the outage stay in the other zones, as Kubernetes never deschedules them), and no
worker that found a task's state on its volume restored that task from offset 0.
"""

from __future__ import annotations

import contextlib
import functools
import json
import random
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, TypeVar

import kmock
import kubernetes
import urllib3

from smoothscale.client.client import USER_AGENT
from smoothscale.contract import shared_names as contract

from . import invariants
from .demo import APP, demo_app, demo_tasks
from .harness import Sandbox
from .observe import settle

T = TypeVar("T")


def _sent_by(pod: str, request: kmock.Request) -> bool:
    """The request comes from the pod's client library (its user agent names the pod)."""
    agent = str(request.headers.get("User-Agent", ""))
    return agent.startswith(USER_AGENT) and agent.endswith(f"/{pod})")


KINDS: dict[str, int] = {
    "pod-kill": 3,
    "operator-kill": 1,
    "api-conflict": 2,
    "api-error": 2,
    "api-hang": 1,
    "metrics-down": 2,
    "api-cutoff": 2,
    "operator-cutoff": 1,
    "zone-loss": 1,
    "scale": 2,
    "drain": 1,
    "template": 1,
}
"""Every kind of event, with its relative frequency."""


@dataclass(frozen=True)
class ChaosSettings:
    events: int = 200
    seed: int = 1
    pause: float = 0.8
    """Seconds between two events."""
    recovery_bound: float = 90.0
    """Seconds within which every task must be processed again once the faults stop."""
    settle_timeout: float = 180.0
    min_replicas: int = 2
    max_replicas: int = 5
    lease_seconds: float | None = None
    """The app's `spec.failover.leaseSeconds` (None: no lease, planning held while a holder is silent)."""


@dataclass
class ChaosReport:
    events: int = 0
    faults: Counter[str] = field(default_factory=Counter)
    violations: list[str] = field(default_factory=list)
    recovery_seconds: float | None = None
    """The longest a task went unprocessed after the faults stopped."""
    seconds: float = 0.0

    def summary(self) -> dict[str, Any]:
        return {
            "events": self.events,
            "faults": dict(sorted(self.faults.items())),
            "violations": len(self.violations),
            "recovery_seconds": None if self.recovery_seconds is None else round(self.recovery_seconds, 1),
            "seconds": round(self.seconds, 1),
        }

    def text(self) -> str:
        lines = [f"chaos: {self.events} events in {self.seconds:.0f} s"]
        lines += [f"  {kind:<14} {count}" for kind, count in sorted(self.faults.items())]
        lines.append(f"  longest gap after the faults stopped: {self.recovery_seconds}")
        lines.append(f"  violations: {len(self.violations)}")
        lines += [f"    {violation}" for violation in self.violations]
        return "\n".join(lines) + "\n" + json.dumps(self.summary(), sort_keys=True)


class ChaosRun:
    """`ChaosRun(sandbox, settings).run()` on a started sandbox: applies the demo app, then the events."""

    def __init__(self, sandbox: Sandbox, settings: ChaosSettings, log: Callable[[str], None] = print) -> None:
        assert sandbox.kubelet is not None, "start the sandbox first"
        self.sandbox = sandbox
        self.kubelet = sandbox.kubelet
        self.faults = sandbox.emulator.emulator.faults
        self.settings = settings
        self.report = ChaosReport()
        self._log = log
        self._random = random.Random(settings.seed)
        self._heals: list[tuple[float, str, Callable[[], None]]] = []
        self._replicas = 3
        self._image = 1

    def run(self) -> ChaosReport:
        started = time.time()
        app = demo_app(replicas=self._replicas)
        if self.settings.lease_seconds is not None:
            app["spec"]["failover"] = {"leaseSeconds": self.settings.lease_seconds}
        self._api(lambda: self.sandbox.apply(app))
        self._settled("create")
        kinds, weights = list(KINDS), list(KINDS.values())
        while self.report.events < self.settings.events:
            kind = self._random.choices(kinds, weights)[0]
            if not self._act(kind):
                continue  # nothing to do it to now (no pod running, a zone already lost): draw again
            self.report.events += 1
            self.report.faults[kind] += 1
            time.sleep(self.settings.pause)
            self._heal(due_only=True)
            self._check_safety(f"event {self.report.events} ({kind})")
            if self.report.events % 20 == 0:
                self._log(f"{self.report.events} events, {len(self.report.violations)} violations")
        self._heal(due_only=False)
        quiet = time.time()
        self._settled("after the faults")
        time.sleep(2.0)
        self._check_final(quiet)
        self.report.seconds = time.time() - started
        return self.report

    # -- events ----------------------------------------------------------------------------------------------

    def _act(self, kind: str) -> bool:
        """Inject one event of `kind`; False when it cannot happen now."""
        choose = self._random
        if kind == "pod-kill":
            pod = self._running_pod()
            if pod is None:
                return False
            with contextlib.suppress(LookupError):  # it died meanwhile
                self.kubelet.crash(pod)
        elif kind == "operator-kill":
            if self.sandbox.operator is None:
                return False
            self.sandbox.stop_operator(kill=True)
            self._later(choose.uniform(1.0, 4.0), "operator", self.sandbox.start_operator)
        elif kind == "api-conflict":
            self.faults.conflict(times=choose.randint(1, 5))
        elif kind == "api-error":
            self.faults.error(times=choose.randint(1, 5))
        elif kind == "api-hang":
            self.faults.hang(choose.uniform(0.5, 3.0), times=choose.randint(1, 3))
        elif kind == "metrics-down":
            pod = self._running_pod()
            if pod is None:
                return False
            self.kubelet.freeze(pod)
            thaw = functools.partial(self.kubelet.freeze, pod, frozen=False)
            self._later(choose.uniform(1.0, 5.0), f"thaw {pod}", thaw)
        elif kind == "api-cutoff":
            pod = self._running_pod()
            if pod is None:
                return False
            fault = self.faults.fail(503, times=None, when=functools.partial(_sent_by, pod))
            self._later(self._cut_seconds(), f"reconnect {pod}", lambda: self.faults.remove(fault))
        elif kind == "operator-cutoff":
            pod = self._running_pod()
            if pod is None:
                return False
            self.kubelet.cut_from_operator(pod)
            reconnect = functools.partial(self.kubelet.cut_from_operator, pod, cut=False)
            self._later(self._cut_seconds(), f"scrape {pod}", reconnect)
        elif kind == "zone-loss":
            if any(name.startswith("zone ") for _, name, _ in self._heals):
                return False  # one zone at a time: the app is spread over three
            zone = choose.choice(self.sandbox.zones)
            self.kubelet.lose_zone(zone)
            self._later(choose.uniform(3.0, 8.0), f"zone {zone}", lambda: self.kubelet.restore_zone(zone))
        elif kind == "scale":
            self._replicas = choose.choice(
                [
                    n
                    for n in range(self.settings.min_replicas, self.settings.max_replicas + 1)
                    if n != self._replicas
                ]
            )
            self._api(lambda: self.sandbox.patch_app(APP, {"spec": {"replicas": self._replicas}}))
        elif kind == "drain":
            pods = sorted(p["metadata"]["name"] for p in self._api(lambda: self.sandbox.pods(APP)))
            if not pods:
                return False
            pod = choose.choice(pods)
            self._api(lambda: self.sandbox.annotate(pod, {contract.LEAVING_ANNOTATION: "chaos"}))
        elif kind == "template":
            self._image += 1
            template = demo_app(image=f"example/orders:{self._image}")["spec"]["template"]
            self._api(lambda: self.sandbox.patch_app(APP, {"spec": {"template": template}}))
        else:
            raise ValueError(f"unknown event kind {kind!r}")
        return True

    def _cut_seconds(self) -> float:
        """How long a partition lasts: up to two leases (three seconds' worth without one)."""
        return self._random.uniform(1.0, 2 * (self.settings.lease_seconds or 3.0))

    def _running_pod(self) -> str | None:
        pods = sorted(self.kubelet.worker_pids())
        return self._random.choice(pods).split("/", 1)[1] if pods else None

    def _later(self, seconds: float, name: str, heal: Callable[[], None]) -> None:
        self._heals.append((time.monotonic() + seconds, name, heal))

    def _heal(self, *, due_only: bool) -> None:
        """Run the heals that are due (or all of them); with `due_only=False` also disarm every API fault,
        thaw every frozen worker and make sure the operator runs."""
        now = time.monotonic()
        due = [h for h in self._heals if not due_only or h[0] <= now]
        self._heals = [h for h in self._heals if h not in due]
        for _, _, heal in due:
            heal()
        if not due_only:
            self.faults.clear()
            for pod in self.kubelet.worker_pids():
                self.kubelet.freeze(pod.split("/", 1)[1], frozen=False)
                self.kubelet.cut_from_operator(pod.split("/", 1)[1], cut=False)
            if self.sandbox.operator is None:
                self.sandbox.start_operator()

    # -- checks ----------------------------------------------------------------------------------------------

    def _check_safety(self, when: str) -> None:
        """What must hold at every moment, faults or not."""
        found = invariants.concurrent_processing(self.sandbox.records())
        publication = self._api(lambda: self.sandbox.publication(APP))
        if publication is not None:
            owners = Counter(task for roles in publication.assignment.values() for task in roles.active)
            found += [
                f"generation {publication.generation} lists {task} active on {count} pods"
                for task, count in owners.items()
                if count > 1
            ]
        new = [v for v in found if v not in self.report.violations]
        self.report.violations += new
        for violation in new:
            self._log(f"{when}: VIOLATION {violation}")

    def _check_final(self, quiet: float) -> None:
        records = self.sandbox.records()
        gaps = invariants.unprocessed_seconds(records, demo_tasks(), quiet, time.time())
        self.report.recovery_seconds = max(gaps.values(), default=0.0)
        self._check_safety("the end")
        publication = self.sandbox.publication(APP)
        zone_of = {
            pod["metadata"]["name"]: (pod.get("spec") or {}).get("nodeName") or "-"
            for pod in self.sandbox.pods(APP)
        }
        self.report.violations += [
            *invariants.gaps_beyond(gaps, self.settings.recovery_bound),
            *invariants.every_task_once(publication, demo_tasks()),
            *invariants.imbalance(publication, zone_of, zones=not self.report.faults["zone-loss"]),
            *invariants.rebuilt_despite_volume(records),
        ]

    def _settled(self, step: str) -> None:
        snapshot = settle(self.sandbox, APP, step, timeout=self.settings.settle_timeout)
        if snapshot is None:
            self.report.violations.append(f"{step}: not settled within {self.settings.settle_timeout:.0f} s")

    def _api(self, call: Callable[[], T]) -> T:
        """The driver's own API calls meet the injected faults too: retry them as any client would."""
        for _ in range(50):
            try:
                return call()
            except kubernetes.client.ApiException as error:
                if error.status not in (409, 500, 504):
                    raise
            except urllib3.exceptions.HTTPError:
                pass
            time.sleep(0.2)
        return call()
