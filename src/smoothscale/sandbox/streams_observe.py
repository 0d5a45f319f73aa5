"""What the demo sees of an app on the streams protocol (KIP-1071), whose pods serve no metrics: Kafka's own
view of its group (`describeStreamsGroups`, sampled by one `StreamsGroupWatch` JVM) says which tasks each
pod's members run, how far behind each task they keep state for is (the task offsets they send in their
heartbeats against the changelogs' end offsets) and so whether a pod runs the published plan: the same
facts the operator plans with (`smoothscale.operator.kafka.streamsgroup`), read apart from it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from smoothscale.contract.publication import Publication
from smoothscale.operator.kafka import streamsgroup

from .kafka_streams import StreamsGroupWatch
from .observe import PodReport
from .streams_app import kafka_runs, plan_differs


class StreamsGroupObserver:
    """Kafka's view of one streams group, as the demo's `GroupView` (actives per pod: `__call__`), its pod
    reports (`reports`) and its final check (`differs`), all from the latest sample of `watch`."""

    def __init__(self, watch: StreamsGroupWatch, group: str) -> None:
        self._watch = watch
        self._group = group

    def __call__(self, app: Mapping[str, Any]) -> dict[str, set[str]] | None:
        view = live(self._watch.latest(self._group))
        if view is None:
            return None
        return {pod: roles["active"] for pod, roles in kafka_runs(view).items()}

    def reports(self, app: Mapping[str, Any], publication: Publication | None) -> dict[str, PodReport]:
        """Per pod in the group: its lags (`restoring_lags`), and as its generation the published one once
        its members run exactly its part of the plan, else the one before."""
        view = live(self._watch.latest(self._group))
        if view is None:
            return {}
        published = publication or Publication(generation=0)
        ends = streamsgroup.end_offsets(view)
        return {
            pod: PodReport(
                scraped=True,
                lags=restoring_lags(members, ends),
                generation=published.generation
                if streamsgroup.runs_plan(members, published.assignment.get(pod))
                else max(published.generation - 1, 0),
            )
            for pod, members in streamsgroup.pods(view).items()
        }

    def differs(self, publication: Publication | None) -> str | None:
        """None when Kafka's view is the plan (`streams_app.plan_differs`), else what differs."""
        return plan_differs(self._watch.latest(self._group), publication)


def live(view: Mapping[str, Any] | None) -> Mapping[str, Any] | None:
    """`view` with each pod's newest member only (the highest member epoch). Under the streams protocol a
    Kafka Streams client is one member, so a pod with two is one whose process was killed and started again:
    the killed one stays in the group, holding its tasks, until its session times out, and what it holds is
    not being processed (the final check, `plan_differs`, reads every member)."""
    if view is None:
        return None
    newest: dict[Any, Mapping[str, Any]] = {}
    for member in view["members"]:
        key = member.get("pod") or member["memberId"]
        if key not in newest or member["memberEpoch"] > newest[key]["memberEpoch"]:
            newest[key] = member
    return {**view, "members": list(newest.values())}


def restoring_lags(members: Sequence[Mapping[str, Any]], ends: Mapping[str, int]) -> dict[str, int]:
    """A pod's lag per task (`streamsgroup.task_lags`), except that an active task its members report at a
    changelog offset still restores (Kafka Streams reports a running active task as -2, not an offset): its
    lag shows, so that the demo does not count it as processing yet."""
    lags = streamsgroup.task_lags(members, ends)
    for member in members:
        actives = set(member["assignment"]["active"])
        for task, offset in member["taskOffsets"].items():
            if task in actives and offset >= 0 and task in ends:
                lags[task] = max(lags[task], ends[task] - offset)
    return lags
