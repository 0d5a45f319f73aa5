"""The operator and the simulator take the same decisions on the same observations.

One sequence of rounds (a 3 -> 4 scale-out whose new pod warms up, then a drain of one pod) is played to the
operator's real reconciler (`AppReconciler`, against the API emulator, its pods' metrics answered from the
sequence) and recorded: every pod it listed and every metric it scraped. The recording is then replayed to
the simulator's operator (`smoothscale.simulation.operator_loop.Operator`, the `smoothscale` strategy).
Round by round, both must retire the same pods, plan for the same reason, and publish the same generation.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import kubernetes

from smoothscale.assignor.handover import EMPTY, Publication
from smoothscale.client.contract import API_VERSION, GROUP, KIND, PLURAL, VERSION
from smoothscale.operator.appref import AppRef
from smoothscale.operator.config import OperatorConfig
from smoothscale.operator.context import OperatorContext
from smoothscale.operator.control import names
from smoothscale.operator.control.observed import PodMetrics, ScrapeResult
from smoothscale.operator.control.pods import format_time
from smoothscale.operator.control.snapshot import build_tasks
from smoothscale.operator.podset import template_revision
from smoothscale.operator.reconcile import AppReconciler, Observation
from smoothscale.operator.resource import load_spec, planner_config
from smoothscale.sandbox.emulator import RunningEmulator
from smoothscale.simulation.operator_loop import Operator, PodReport
from smoothscale.simulation.strategies import make_strategy

APP, NAMESPACE, UID = "parity", "default", "parity-uid"
EPOCH = datetime(2026, 3, 1, tzinfo=UTC)
ROUND_SECONDS = 5
CHANGELOG = 1000
ZONES = {"node-a": "zone-a", "node-b": "zone-b", "node-c": "zone-c"}
SPEC: dict[str, Any] = {
    "replicas": 3,
    "template": {"spec": {"containers": [{"name": "app", "image": "example/parity:1"}]}},
    "topology": {"subtopologies": [{"name": "0", "partitions": 6}]},
    "assignment": {"numStandbys": 1, "acceptableRecoveryLag": 100, "maxWarmupReplicas": 2},
}
TASKS = [f"0_{p}" for p in range(6)]
JOINS = {0: ["parity-0", "parity-1", "parity-2"], 3: ["parity-3"]}
DRAIN = (12, "parity-1")
ROUNDS = 24


@dataclass
class Round:
    """What the operator observed in one round, and what it decided."""

    now: datetime
    pods: list[tuple[str, str, datetime | None, str]]  # name, zone, leaving since, uid
    metrics: dict[str, PodMetrics]
    retired: list[str] = field(default_factory=list)
    planned: str | None = None
    published: Publication = EMPTY


class World:
    """The pods around the operator: each applies what was published by the round before, and a copy it has
    held for two rounds has caught up."""

    def __init__(self, core: kubernetes.client.CoreV1Api) -> None:
        self.core = core
        self.held_since: dict[tuple[str, str], int] = {}
        self.acked: dict[str, int] = {}

    def start_pod(self, name: str, ordinal: int) -> None:
        node = sorted(ZONES)[ordinal % len(ZONES)]
        labels = {**names.app_labels(APP), names.REVISION_LABEL: template_revision(load_spec(SPEC))}
        body = {"metadata": {"name": name, "labels": labels}, "spec": {"nodeName": node, "containers": []}}
        self.core.create_namespaced_pod(NAMESPACE, body)
        status = {
            "phase": "Running",
            "podIP": "127.0.0.1",
            "conditions": [{"type": "Ready", "status": "True"}],
        }
        self.core.patch_namespaced_pod_status(name, NAMESPACE, {"status": status})
        self.acked[name] = 0

    def drain(self, name: str, now: datetime) -> None:
        leaving = {names.LEAVING_ANNOTATION: format_time(now)}
        self.core.patch_namespaced_pod(name, NAMESPACE, {"metadata": {"annotations": leaving}})

    def metrics(self, index: int, published: Publication) -> dict[str, PodMetrics]:
        out = {}
        for pod, generation in self.acked.items():
            roles = published.assignment.get(pod)
            held = [*roles.active, *roles.standby, *roles.warmup] if roles is not None else []
            for task in held:
                self.held_since.setdefault((pod, task), index)
            lags = {
                task: 0 if index - since >= 2 else CHANGELOG
                for (holder, task), since in self.held_since.items()
                if holder == pod
            }
            out[pod] = PodMetrics(
                lags=lags, end_offsets=dict.fromkeys(TASKS, CHANGELOG), generation=generation
            )
        return out

    def applied(self, published: Publication) -> None:
        for pod in self.acked:
            self.acked[pod] = published.generation


class RecordingScraper:
    def __init__(self) -> None:
        self.answer: dict[str, PodMetrics] = {}

    async def scrape_all(self, urls: dict[str, str], metric_names: object) -> dict[str, ScrapeResult]:
        return {pod: self.answer[pod] for pod in urls if pod in self.answer}

    async def close(self) -> None:
        pass


def _body(replicas: int) -> dict[str, Any]:
    return {
        "apiVersion": API_VERSION,
        "kind": KIND,
        "metadata": {"name": APP, "namespace": NAMESPACE, "uid": UID, "generation": 1},
        "spec": {**SPEC, "replicas": replicas},
    }


def _journal(path: Path, kind: str, start: int) -> list[dict[str, Any]]:
    lines = path.read_text().splitlines()[start:] if path.exists() else []
    return [entry for entry in map(json.loads, lines) if entry["kind"] == kind]


async def _operator_rounds(cluster: RunningEmulator, journal: Path) -> list[Round]:
    """The real reconciler, round by round; returns what it observed and decided."""
    rounds: list[Round] = []
    clock = {"now": EPOCH}
    config = OperatorConfig(
        kubeconfig=cluster.kubeconfig, journal_stdout=False, journal_file=journal, metrics_port=None
    )
    context = OperatorContext(config, clock=lambda: clock["now"])
    context.login()
    scraper = RecordingScraper()
    context.scraper = scraper  # type: ignore[assignment]
    context.post_event = lambda app, event: None  # type: ignore[method-assign]  # kopf's poster is not running
    with kubernetes.config.new_client_from_config(config_file=str(cluster.kubeconfig)) as client:
        core = kubernetes.client.CoreV1Api(client)
        custom = kubernetes.client.CustomObjectsApi(client)
        custom.create_namespaced_custom_object(GROUP, VERSION, NAMESPACE, PLURAL, _body(3))
        world = World(core)
        reconciler = AppReconciler(AppRef(NAMESPACE, APP, UID), context)
        published = EMPTY
        try:
            for index in range(ROUNDS):
                now = EPOCH + timedelta(seconds=ROUND_SECONDS * index)
                clock["now"] = now
                for name in JOINS.get(index, []):
                    world.start_pod(name, int(name.rsplit("-", 1)[1]))
                if index == DRAIN[0]:
                    world.drain(DRAIN[1], now)
                listed = core.list_namespaced_pod(NAMESPACE).items
                # `replicas` follows the pods that stay: the pod set's only decision here is retirement.
                staying = sum(names.LEAVING_ANNOTATION not in (p.metadata.annotations or {}) for p in listed)
                scraper.answer = world.metrics(index, published)
                seen = len(journal.read_text().splitlines()) if journal.exists() else 0
                await reconciler.reconcile(Observation(body=_body(staying), zones=ZONES))
                published = reconciler.publication
                retired = [e["pod"] for e in _journal(journal, "scaling", seen) if e["step"] == "retire"]
                plans = [e["reason"] for e in _journal(journal, "plan", seen)]
                pods = [
                    (
                        p.metadata.name,
                        ZONES[p.spec.node_name],
                        _since((p.metadata.annotations or {}).get(names.LEAVING_ANNOTATION)),
                        p.metadata.uid,
                    )
                    for p in listed
                ]
                rounds.append(
                    Round(now, pods, dict(scraper.answer), retired, plans[0] if plans else None, published)
                )
                for name in retired:
                    world.acked.pop(name, None)
                world.applied(published)
        finally:
            await context.close()
    return rounds


def _since(value: str | None) -> datetime | None:
    return None if value is None else datetime.fromisoformat(value)


class Replay:
    """The recorded observations of one round, as the simulator's operator reads them."""

    def __init__(self, observed: Round) -> None:
        self.observed = observed

    def running_pods(self) -> list[PodReport]:
        return [
            PodReport(
                name,
                zone,
                1,
                None if since is None else (since - EPOCH).total_seconds(),
                self.observed.metrics[name].generation or 0,
                hash(uid),
            )
            for name, zone, since, uid in self.observed.pods
        ]

    def lags(self, pod: str) -> dict[str, int]:
        return dict(self.observed.metrics[pod].lags)


async def test_the_simulator_decides_as_the_operator_on_the_same_observations(
    cluster: RunningEmulator, tmp_path: Path
) -> None:
    recorded = await _operator_rounds(cluster, tmp_path / "journal.jsonl")
    spec = load_spec(SPEC)
    simulated = Operator(
        make_strategy("smoothscale"),
        planner_config(spec),
        build_tasks(spec, dict.fromkeys(TASKS, CHANGELOG)),
        EPOCH,
        APP,
    )
    reasons = []
    for index, observed in enumerate(recorded):
        result = simulated.wake((observed.now - EPOCH).total_seconds(), Replay(observed), scrape=True)
        where = f"round {index} at +{ROUND_SECONDS * index}s"
        assert list(result.retire) == observed.retired, where
        assert result.plan_reason == observed.planned, where
        assert simulated.published == observed.published, where
        reasons.append(observed.planned)
    # The sequence exercised what it is about: a first plan, the new pod, catch-ups, the drain, a retirement.
    assert {"FirstPlan", "PodsChanged", "CaughtUp"} <= set(reasons)
    assert [r.retired for r in recorded if r.retired] == [[DRAIN[1]]]
    assert recorded[-1].published.generation >= 5
