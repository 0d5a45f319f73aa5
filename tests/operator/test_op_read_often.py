"""The pods a moving app reads every round (`Decisions.read_often`): a scale-out read through them alone,
the other pods at the steady cadence, reaches the same end in as many rounds as one that reads every pod
every round, with fewer reads."""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from datetime import timedelta

from step_testkit import listed_pod, observation
from test_op_round_decisions import APP, NOW

from smoothscale.assignor.planner import plan as make_plan
from smoothscale.contract.publication import Publication
from smoothscale.control import step as control_step
from smoothscale.control.observed import PodMetrics, ScrapeResult
from smoothscale.control.pods import PodInfo
from smoothscale.resource import load_spec, template_revision

SPEC = load_spec(
    {
        "replicas": 4,
        "template": {"spec": {"containers": [{"name": "app", "image": "orders:1"}]}},
        "topology": {"subtopologies": [{"name": "0", "partitions": 12}]},
        "assignment": {"numStandbys": 1, "acceptableRecoveryLag": 100, "maxWarmupReplicas": 2},
    }
)
REVISION = template_revision(SPEC)
CONFIG = control_step.RoundConfig(startup_grace=0.0)
RESTORE_PER_ROUND = 150
"""Records a copy new on a pod restores each round (it starts 600 behind): a warmup takes four rounds."""
STEADY_ROUNDS = 15
"""A pod outside `read_often` is read every this many rounds (the steady cadence)."""


@dataclass
class Fleet:
    """Pods that apply every generation at once and restore each copy they newly hold."""

    pods: list[PodInfo]
    held: dict[tuple[str, str], int] = field(default_factory=dict)
    """(pod, task) -> the round the pod began holding a copy of the task."""

    def read(self, name: str, published: Publication, at: int) -> PodMetrics:
        roles = published.assignment.get(name)
        tasks = [*roles.active, *roles.standby, *roles.warmup] if roles is not None else []
        lags = {}
        for task in tasks:
            since = self.held.setdefault((name, task), at)
            lags[task] = max(0, 600 - RESTORE_PER_ROUND * (at - since))
        return PodMetrics(lags=lags, generation=published.generation)


def _run(only_read_often: bool) -> tuple[int, int, Publication, list[int]]:
    """A converged 4-pod app scaled out to 6: the rounds until it is at rest again, the pod reads made, the
    last generation, and how many pods each round of the migration read."""
    fleet = Fleet([replace(listed_pod(APP, n, REVISION), created=NOW - timedelta(hours=1)) for n in range(4)])
    memory = control_step.initial_memory(NOW - timedelta(hours=1))
    published, spec = Publication(generation=0), SPEC
    results: dict[str, ScrapeResult] = {}
    read_at: dict[str, int] = {}
    read_often: frozenset[str] | None = None
    reads, per_round, scaled_at = 0, [], None
    for at in range(200):
        names = [p.name for p in fleet.pods]
        due = [
            n
            for n in names
            if not only_read_often
            or read_often is None
            or n in read_often
            or at - read_at.get(n, -STEADY_ROUNDS) >= STEADY_ROUNDS
        ]
        for name in due:
            results[name], read_at[name] = fleet.read(name, published, at), at
        results = {n: results[n] for n in names}
        reads += len(due)
        seen = observation(APP, spec, REVISION, NOW + timedelta(seconds=at), fleet.pods, results, published)
        decisions, memory, _ = control_step.step_planning_inline(memory, seen, CONFIG, make_plan)
        if decisions.pod_set is not None:
            fleet.pods += [listed_pod(APP, n, REVISION) for n in decisions.pod_set.create]
        pods_changed = decisions.pod_set is not None and not decisions.pod_set.empty
        read_often = None if pods_changed else decisions.read_often
        if decisions.publish is not None:
            published = decisions.publish
            memory = control_step.after_publishing(memory, seen.now)
        if scaled_at is not None:
            per_round.append(len(due))
        if decisions.at_rest and scaled_at is None and published.generation > 0:
            spec, scaled_at, reads = spec.model_copy(update={"replicas": 6}), at, 0
        elif decisions.at_rest and scaled_at is not None and at > scaled_at + 1:
            return at - scaled_at, reads, published, per_round
    raise AssertionError("the scale-out never came to rest")


def test_a_scale_out_read_through_its_moving_pods_ends_as_one_reading_every_pod_with_fewer_reads() -> None:
    every_rounds, every_reads, every_end, _ = _run(only_read_often=False)
    often_rounds, often_reads, often_end, per_round = _run(only_read_often=True)
    assert {p for p, roles in often_end.assignment.items() if roles.active} == {
        f"{APP}-{n}" for n in range(6)
    }
    assert often_end.assignment == every_end.assignment
    assert often_rounds <= every_rounds, (often_rounds, every_rounds)
    assert often_reads < every_reads * 0.8, (often_reads, every_reads)
    assert min(per_round) < 6, "some rounds of the migration read only the pods it waits on"


def test_pods_that_come_read_with_the_ones_waited_on_and_a_pod_that_goes_reads_every_pod() -> None:
    pods = [replace(listed_pod(APP, n, REVISION), created=NOW - timedelta(hours=1)) for n in range(3)]
    seen = observation(APP, SPEC, REVISION, NOW, pods, {}, Publication(generation=1))
    stepped = control_step.Stepped(seen, control_step.Decisions(read_often=frozenset({"orders-1"})), None)
    assert stepped.read_often(SPEC, pods) == {"orders-1"}
    assert stepped.read_often(SPEC, [*pods, listed_pod(APP, 3, REVISION, ready=False)]) == {
        "orders-1",
        "orders-3",
    }, "a new pod, and the one waited on"
    assert stepped.read_often(SPEC, [*pods[:2], replace(pods[2], ip="10.0.0.9")]) == {"orders-1", "orders-2"}
    assert stepped.read_often(SPEC, pods[:2]) is None, "a pod gone: its tasks move, every lag read anew"
    assert stepped.read_often(SPEC, [*pods[:2], replace(pods[2], ready=False)]) is None
    assert stepped.read_often(SPEC.model_copy(update={"replicas": 5}), pods) is None
    moving = control_step.Stepped(seen, control_step.Decisions(read_often=None), None)
    assert moving.read_often(SPEC, pods) is None
