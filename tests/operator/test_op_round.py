"""The operator, the simulator and `smoothscale explain` decide through the same step of the control core
(`control.step`), so they decide alike by construction; these tests check that they do call it.

One sequence of rounds is played to the operator's real reconciler (`AppReconciler`, against the API
emulator, its pods' metrics answered from the sequence): it creates the pods of `replicas: 3`, a scale-out
to 4 whose new pod warms up, a drain of one pod (replaced), a scale-in to 3 taken back a round later, then a
new template (a swap); each change of the spec is a new `metadata.generation`. The pods it creates are
bound and ready by the next round. Every round is recorded: the core's observation and memory, every pod
listed, every metric scraped, and what was decided. Then:

- the reconciler ran `control.step.step` once a round (again with the plan, when it asked for one), and
  `explain`, on a recorded observation, runs that same step; the simulator's operator, replaying the
  recording (the pods listed, the metrics scraped, the spec's `replicas` and template), runs it as often
  too, and takes the operator's pod-set steps, plans for its reasons and publishes its generations;
- `explain`, given the observation of the round in which the operator made its first plan, plans on the
  operator's snapshot and prints the operator's plan.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import kubernetes
import pytest

from smoothscale.assignor.models import Plan, Snapshot
from smoothscale.cli.ops_explain import observation, replan
from smoothscale.contract.publication import EMPTY, Publication
from smoothscale.contract.shared_names import API_VERSION, GROUP, KIND, PLURAL, VERSION
from smoothscale.control import object_names
from smoothscale.control import step as control_step
from smoothscale.control.observed import PodMetrics, ScrapeResult
from smoothscale.control.pods import format_time
from smoothscale.control.scaling import PodSetPlan
from smoothscale.control.snapshot import build_tasks
from smoothscale.operator.appref import AppRef
from smoothscale.operator.config import OperatorConfig
from smoothscale.operator.context import OperatorContext
from smoothscale.operator.reconcile import AppObject, AppReconciler
from smoothscale.resource import load_spec, planner_config, template_revision
from smoothscale.sandbox.emulator import RunningEmulator
from smoothscale.simulation.operator_loop import AppSpec, Operator, PodReport, WakeResult
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
REPLICAS = {0: 3, 3: 4, 18: 3, 19: 4}
"""round -> the `replicas` a user sets then."""
IMAGES = {0: "example/parity:1", 22: "example/parity:2"}
"""round -> the pod template's image a user sets then (a new revision: a swap)."""
DRAIN = (12, "parity-1")
ROUNDS = 32
POD_SET_STEPS = ("stamp-leaving", "leaving", "kept", "retire", "remove-stopped", "restart", "create")
"""The journal's `scaling` steps of the pod-set decisions, in the order the operator takes them."""


@dataclass(frozen=True)
class Listed:
    """A pod as the operator listed it."""

    name: str
    zone: str
    leaving_since: datetime | None
    leaving_reason: str | None
    uid: str
    revision: str
    ready: bool
    created: datetime


@dataclass
class Round:
    """What the operator observed in one round, and what it decided."""

    now: datetime
    replicas: int
    revision: str
    """The template revision of the spec."""
    pods: list[Listed]
    metrics: dict[str, PodMetrics]
    steps: list[tuple[str, str]] = field(default_factory=list)
    """(journal step, pod) of its pod-set decisions."""
    planned: str | None = None
    published: Publication = EMPTY
    core: list[control_step.Observation] = field(default_factory=list)
    """The observations the reconciler gave the core's step this round."""
    snapshots: list[Snapshot] = field(default_factory=list)
    """What it planned on, and the plans it made."""
    plans: list[Plan] = field(default_factory=list)


class World:
    """The pods around the operator: each applies what was published by the round before, and a copy it has
    held for two rounds has caught up."""

    def __init__(self, core: kubernetes.client.CoreV1Api) -> None:
        self.core = core
        self.held_since: dict[tuple[str, str], int] = {}
        self.acked: dict[str, int] = {}

    def start_pod(self, name: str) -> None:
        """Bind a pod the operator created to the node of its ordinal's zone and report it running, ready."""
        node = sorted(ZONES)[int(name.rsplit("-", 1)[1]) % len(ZONES)]
        binding = {"metadata": {"name": name}, "target": {"apiVersion": "v1", "kind": "Node", "name": node}}
        self.core.create_namespaced_pod_binding(name, NAMESPACE, binding, _preload_content=False)
        status = {
            "phase": "Running",
            "podIP": "127.0.0.1",
            "conditions": [{"type": "Ready", "status": "True"}],
        }
        self.core.patch_namespaced_pod_status(name, NAMESPACE, {"status": status})
        self.acked[name] = 0

    def drain(self, name: str, now: datetime) -> None:
        leaving = {object_names.LEAVING_ANNOTATION: format_time(now)}
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


def _spec(replicas: int, image: str) -> dict[str, Any]:
    return {
        **SPEC,
        "replicas": replicas,
        "template": {"spec": {"containers": [{"name": "app", "image": image}]}},
    }


def _body(spec: dict[str, Any], generation: int = 1) -> dict[str, Any]:
    return {
        "apiVersion": API_VERSION,
        "kind": KIND,
        "metadata": {"name": APP, "namespace": NAMESPACE, "uid": UID, "generation": generation},
        "spec": spec,
    }


def _journal(path: Path, kind: str, start: int) -> list[dict[str, Any]]:
    lines = path.read_text().splitlines()[start:] if path.exists() else []
    return [entry for entry in map(json.loads, lines) if entry["kind"] == kind]


async def _operator_rounds(
    cluster: RunningEmulator, journal: Path, monkeypatch: pytest.MonkeyPatch
) -> list[Round]:
    """The real reconciler, round by round; returns what it observed and decided, with the observations it
    gave the core's step and what that planned on."""
    rounds: list[Round] = []
    core_steps: list[control_step.Observation] = []
    planned: list[tuple[Snapshot, Plan]] = []
    real_step = control_step.step

    def step(
        memory: control_step.RoundMemory, seen: control_step.Observation, config: control_step.RoundConfig
    ) -> tuple[control_step.Decisions, control_step.RoundMemory, datetime | None]:
        core_steps.append(seen)
        if seen.plan is not None:
            planned.append((seen.plan.request.snapshot, seen.plan.plan))
        return real_step(memory, seen, config)

    monkeypatch.setattr(control_step, "step", step)
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
        custom.create_namespaced_custom_object(GROUP, VERSION, NAMESPACE, PLURAL, _body(SPEC))
        world = World(core)
        reconciler = AppReconciler(AppRef(NAMESPACE, APP, UID), context)
        published = EMPTY
        replicas, image, generation = 0, "", 0
        try:
            for index in range(ROUNDS):
                now = EPOCH + timedelta(seconds=ROUND_SECONDS * index)
                clock["now"] = now
                changed = (REPLICAS.get(index, replicas), IMAGES.get(index, image))
                if changed != (replicas, image):
                    replicas, image = changed
                    generation += 1
                spec = _spec(replicas, image)
                if index == DRAIN[0]:
                    world.drain(DRAIN[1], now)
                listed = core.list_namespaced_pod(NAMESPACE).items
                scraper.answer = world.metrics(index, published)
                seen = len(journal.read_text().splitlines()) if journal.exists() else 0
                reconciler.pods_changed()  # kopf's pod_changed: the world's pods may have changed
                await reconciler.reconcile(AppObject(body=_body(spec, generation), zones=ZONES))
                published = reconciler.publication
                steps = [
                    (e["step"], e["pod"])
                    for e in _journal(journal, "scaling", seen)
                    if e["step"] in POD_SET_STEPS
                ]
                plans = [e["reason"] for e in _journal(journal, "plan", seen)]
                pods = [_listed(p) for p in listed]
                metrics = dict(scraper.answer)
                revision = template_revision(load_spec(spec))
                record = Round(now, replicas, revision, pods, metrics, steps, plans[0] if plans else None)
                record.published, record.core = published, list(core_steps)
                record.snapshots, record.plans = [s for s, _ in planned], [p for _, p in planned]
                core_steps.clear()
                planned.clear()
                rounds.append(record)
                for step, name in steps:
                    if step == "retire":
                        world.acked.pop(name, None)
                    elif step == "create":
                        world.start_pod(name)
                world.applied(published)
        finally:
            await context.close()
    return rounds


def _listed(pod: Any) -> Listed:
    annotations = pod.metadata.annotations or {}
    since = annotations.get(object_names.LEAVING_ANNOTATION)
    return Listed(
        name=pod.metadata.name,
        zone=ZONES[pod.spec.node_name],
        leaving_since=None if since is None else datetime.fromisoformat(since),
        leaving_reason=annotations.get(object_names.LEAVING_REASON_ANNOTATION),
        uid=pod.metadata.uid,
        revision=pod.metadata.labels[object_names.REVISION_LABEL],
        ready=any(c.type == "Ready" and c.status == "True" for c in pod.status.conditions or []),
        created=pod.metadata.creation_timestamp,
    )


def _steps(decided: PodSetPlan | None) -> list[tuple[str, str]]:
    """The simulator's pod-set decisions as the operator's journal names its steps."""
    if decided is None:
        return []
    return [
        *(("stamp-leaving", pod) for pod in decided.stamp_leaving),
        *(("leaving", pod) for pod, _ in decided.mark_leaving),
        *(("kept", pod) for pod in decided.unmark_leaving),
        *(("retire", retired.pod) for retired in decided.retire),
        *(("remove-stopped", pod) for pod in decided.remove_stopped),
        *(("restart", pod) for pod in decided.restart),
        *(("create", object_names.pod_name(APP, ordinal)) for ordinal in decided.create),
    ]


class Replay:
    """The recorded observations of one round, as the simulator's operator reads them."""

    def __init__(self, observed: Round) -> None:
        self.observed = observed

    def listed_pods(self) -> list[PodReport]:
        return [
            PodReport(
                pod.name,
                pod.zone,
                None if pod.leaving_since is None else (pod.leaving_since - EPOCH).total_seconds(),
                self._acked(pod.name),
                hash(pod.uid),
                pod.revision,
                pod.leaving_reason,
                pod.ready,
                (pod.created - EPOCH).total_seconds(),
            )
            for pod in self.observed.pods
        ]

    def running_pods(self) -> list[PodReport]:
        return [pod for pod in self.listed_pods() if pod.name in self.observed.metrics]

    def _acked(self, pod: str) -> int:
        metrics = self.observed.metrics.get(pod)
        return -1 if metrics is None else metrics.generation or 0

    def lags(self, pod: str) -> dict[str, int]:
        return dict(self.observed.metrics[pod].lags)


class Calls:
    """Counts the calls of one function of the core, whoever calls it."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch, name: str) -> None:
        self.count = 0
        real = getattr(control_step, name)

        def counted(*args: Any, **kwargs: Any) -> Any:
            self.count += 1
            return real(*args, **kwargs)

        monkeypatch.setattr(control_step, name, counted)


async def test_the_operator_the_simulator_and_explain_decide_through_the_same_step(
    cluster: RunningEmulator, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    steps = Calls(monkeypatch, "step")
    recorded = await _operator_rounds(cluster, tmp_path / "journal.jsonl", monkeypatch)
    # once a round; when it plans, the planner runs in a thread and the next step observes the same with the
    # plan in it; none when the round observes what the last step observed before its wake-up time
    assert [len(r.core) for r in recorded] == [2 if r.planned else 1 if r.core else 0 for r in recorded]
    assert all(replace(seen, plan=None) == r.core[0] for r in recorded for seen in r.core)
    skipped = [r for r in recorded if not r.core]
    assert skipped and not any(r.steps or r.planned for r in skipped), "a skipped round decides nothing"
    assert steps.count == sum(len(r.core) for r in recorded), "the reconciler decides in the step"
    spec = load_spec(SPEC)
    simulated = Operator(
        make_strategy("smoothscale"),
        planner_config(spec),
        build_tasks(spec, dict.fromkeys(TASKS, CHANGELOG)),
        EPOCH,
        APP,
        startup_grace=OperatorConfig.model_fields["startup_grace"].default,
    )
    reasons = []
    for index, observed in enumerate(recorded):
        seconds = (observed.now - EPOCH).total_seconds()
        wanted = AppSpec(observed.replicas, observed.revision)
        before = steps.count
        result: WakeResult = simulated.round(seconds, Replay(observed), wanted)
        where = f"round {index} at +{ROUND_SECONDS * index}s"
        # the simulator steps every round, also where the reconciler skipped one: it decides the same
        assert steps.count == before + max(1, len(observed.core)), (
            f"{where}: the simulator decides in the step"
        )
        assert _steps(result.pod_set) == observed.steps, where
        assert result.plan_reason == observed.planned, where
        assert simulated.published == observed.published, where
        reasons.append(observed.planned)
    seen = next(r.core[0] for r in reversed(recorded) if r.core)
    before = steps.count
    replan(seen)
    assert steps.count == before + 2, "explain runs the operator's step, and again with the plan it asked for"
    # The sequence exercised what it is about: a first plan, the new pods, catch-ups, the drain and its
    # replacement, a retirement, a scale-in taken back, then a swap: new pods surged (the lowest free ordinal
    # first), an old pod marked for each ready new one, and every old pod retired.
    assert {"FirstPlan", "SpecChanged", "PodsChanged", "CaughtUp"} <= set(reasons)
    steps = [step for r in recorded for step in r.steps]
    created = [int(pod.rsplit("-", 1)[1]) for step, pod in steps if step == "create"]
    assert created == [0, 1, 2, 3, 4, 1, 5, 6, 7]
    assert [pod for step, pod in steps if step == "leaving"] == [f"{APP}-{n}" for n in (4, 4, 3, 2, 0)]
    assert [pod for step, pod in steps if step == "kept"] == [f"{APP}-4"]
    assert sorted(pod for step, pod in steps if step == "retire") == [f"{APP}-{n}" for n in range(5)]
    assert recorded[-1].published.generation >= 5


async def test_explain_plans_what_the_operator_planned_on_a_recorded_round(
    cluster: RunningEmulator, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The round of the operator's first plan, given to `explain` as the command observes it (the pods, their
    zones, the publication, the metrics): the same planner input, so the same plan."""
    recorded = await _operator_rounds(cluster, tmp_path / "journal.jsonl", monkeypatch)
    first = next(r for r in recorded if r.planned == "FirstPlan")
    seen = first.core[0]
    spec = load_spec(_spec(first.replicas, IMAGES[0]))
    assert seen.published is not None
    explained = observation(APP, spec, seen.pods, seen.zones, seen.published, seen.results, seen.now)
    replanned = replan(explained)
    assert replanned.snapshot == first.snapshots[0]
    assert replanned.plan == first.plans[0]
    # and on a later round, where pods are leaving and warmups catch up: the operator would plan the same
    later = next(r for r in recorded[recorded.index(first) + 1 :] if r.planned == "CaughtUp")
    seen = later.core[0]
    assert seen.published is not None
    spec = load_spec(_spec(later.replicas, IMAGES[0]))
    explained = observation(APP, spec, seen.pods, seen.zones, seen.published, seen.results, seen.now)
    assert replan(explained).snapshot.clients == later.snapshots[0].clients
