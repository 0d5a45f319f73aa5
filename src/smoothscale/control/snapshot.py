"""The planner's input (Contract 1) from what the operator observes about one app.

Tasks come from the spec's topology (`<subtopology>_<partition>`), with their racks read from Kafka or from
the spec's static map, their changelog length from Kafka's end offsets or else from the end offsets the
pods report, and their weight from the measured processing rates when the spec balances by weight
(`task_weights`). Clients are the app's pods that run on a node and are not being deleted, with their
node's zone, their leaving time, the lags they reported, and their roles in the published generation.
Tasks a pod reports but the topology no longer has are left out: the planner refuses unknown task ids.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Final

from smoothscale.assignor.models import BalanceBy, Client, PlannerConfig, Snapshot, Task
from smoothscale.contract.publication import ClientAssignment, Publication

from ..resource import StreamsAppSpec, input_partition_racks, planner_config
from .observed import PodMetrics, ScrapeResult
from .pods import PodInfo, leaving_since
from .zones import pod_zone


@dataclass(frozen=True)
class ClientObservation:
    pod: str
    zone: str | None  # None: the node has no zone label
    leaving_since: datetime | None
    lags: Mapping[str, int]
    """Lags the pod reported this round ({} when it reported none)."""
    capacity: int = 1
    """Relative processing capacity (the simulator's pods may differ; the operator's pods are alike)."""
    uid: str = ""
    """The pod object's uid: a pod recreated under the same name (a lost pod, a lost volume) is a new member,
    whatever it held may be gone."""


def task_ids(spec: StreamsAppSpec) -> list[str]:
    return [f"{sub.name}_{p}" for sub in spec.topology.subtopologies for p in range(sub.partitions)]


IDLE_WEIGHT_FRACTION: Final = 0.01
"""A task measured at 0 records/s weighs this fraction of its subtopology's weight (the planner needs a
positive weight, and an idle task still holds a thread and its state)."""


def task_weights(spec: StreamsAppSpec, rates: Mapping[str, float]) -> dict[str, float]:
    """Each task's weight, in the unit of the spec's subtopology weights.

    With `balanceBy: count` (where weights do not place anything) and for tasks without a measured rate,
    the weight is the spec's. With `balanceBy: weight`, measured rates (records/s, see `rates`) are scaled
    so that the measured tasks weigh together what the spec gives them: a measured task of average rate
    then weighs its subtopology's average weight, and unmeasured tasks (new partitions, tasks not yet
    scraped since a restart) stay comparable with measured ones.
    """
    declared = {
        f"{sub.name}_{p}": sub.weight for sub in spec.topology.subtopologies for p in range(sub.partitions)
    }
    measured = {task: rate for task, rate in rates.items() if task in declared}
    total = sum(measured.values())
    if spec.assignment.balance_by is not BalanceBy.WEIGHT or total <= 0:
        return declared
    scale = sum(declared[task] for task in measured) / total
    return {
        task: max(measured[task] * scale, IDLE_WEIGHT_FRACTION * weight) if task in measured else weight
        for task, weight in declared.items()
    }


def build_tasks(
    spec: StreamsAppSpec,
    end_offsets: Mapping[str, int],
    rates: Mapping[str, float] | None = None,
    racks: Mapping[str, Sequence[Sequence[str]]] | None = None,
) -> list[Task]:
    """`racks`: input topic -> per partition, the zones of its replicas, as read from Kafka."""
    weights = task_weights(spec, rates or {})
    return [
        Task(
            id=f"{sub.name}_{p}",
            subtopology=sub.name,
            stateful=sub.stateful,
            changelog_offsets=end_offsets.get(f"{sub.name}_{p}", 0),
            input_partition_racks=input_partition_racks(spec, sub, p, racks),
            weight=weights[f"{sub.name}_{p}"],
        )
        for sub in spec.topology.subtopologies
        for p in range(sub.partitions)
    ]


def merge_end_offsets(known: Mapping[str, int], reports: Iterable[Mapping[str, int]]) -> dict[str, int]:
    """The largest end offset seen per task: changelogs only grow, and a pod that is behind on reading
    the end offset must not make the changelog look shorter than another pod saw it."""
    merged = dict(known)
    for report in reports:
        for task, offset in report.items():
            if offset > merged.get(task, -1):
                merged[task] = offset
    return merged


def changelog_sizes(reported: Mapping[str, int], read: Mapping[str, int]) -> dict[str, int]:
    """Each task's changelog size: the end offsets read from Kafka where there are some (the broker's word,
    current), else the largest end offset a pod reported."""
    return {**reported, **read}


def build_snapshot(
    spec: StreamsAppSpec,
    now: datetime,
    clients: Sequence[ClientObservation],
    published: Publication,
    end_offsets: Mapping[str, int],
    rates: Mapping[str, float] | None = None,
    racks: Mapping[str, Sequence[Sequence[str]]] | None = None,
) -> Snapshot:
    """`rates`: each task's averaged processing rate (records/s), the weights of `balanceBy: weight`;
    `racks`: the input partitions' zones read from Kafka (`spec.racks` overrides them per topic)."""
    tasks = build_tasks(spec, end_offsets, rates, racks)
    return planner_input(now, planner_config(spec), tasks, clients, published)


def planner_input(
    now: datetime,
    config: PlannerConfig,
    tasks: Sequence[Task],
    clients: Sequence[ClientObservation],
    published: Publication,
) -> Snapshot:
    """Contract 1's snapshot from the tasks, the pods taking part in planning and the publication in force:
    the one way the operator and the simulator turn what they observe into the planner's input."""
    known = {task.id for task in tasks}
    return Snapshot(
        now=now, config=config, tasks=list(tasks), clients=[_client(c, published, known) for c in clients]
    )


def observed_clients(
    pods: Sequence[PodInfo],
    results: Mapping[str, ScrapeResult],
    zones: Mapping[str, str],
    holding: Collection[str],
) -> list[ClientObservation]:
    """The pods that take part in planning (on a node, not being deleted, not stopped, and ready or holding
    tasks already: `holding`, `probing.holders`), with their node's zone, their leaving time and the lags
    they reported this round. A pod still starting takes no task yet: a stateless task moved there would
    stand still until its process runs (on a real API server new pods took seconds to start)."""
    out = []
    for pod in pods:
        if not pod.schedulable_client or not (pod.ready or pod.name in holding):
            continue
        result = results.get(pod.name)
        lags = result.lags if isinstance(result, PodMetrics) else {}
        since = leaving_since(pod) if pod.is_leaving else None
        out.append(ClientObservation(pod.name, pod_zone(pod.node, zones), since, lags, uid=pod.uid))
    return out


def _client(observed: ClientObservation, published: Publication, known: set[str]) -> Client:
    """The pod as the planner sees it. A task being revoked from this pod still counts as its active:
    until the pod confirms the revocation it may be running it, and it is the one copy sure to be caught
    up. Seen as ownerless, a task whose other caught-up copies sit on leaving pods would go to the most
    caught-up staying pod, one with no state, and stop for a whole restore (seen in a host swap)."""
    roles = published.assignment.get(observed.pod) or ClientAssignment()
    revoked = [t for t, r in published.revoking.items() if r.owner == observed.pod and t in known]
    return Client(
        id=observed.pod,
        rack=observed.zone,
        capacity=observed.capacity,
        leaving_since=observed.leaving_since,
        lags={task: lag for task, lag in observed.lags.items() if task in known},
        active=[t for t in roles.active if t in known] + revoked,
        standby=[t for t in roles.standby if t in known and t not in revoked],
        warmup=[t for t in roles.warmup if t in known and t not in revoked],
    )
