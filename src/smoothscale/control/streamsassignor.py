"""Whether the brokers of a `group.protocol=streams` app load smoothscale's assignor: never silence.

Under the streams rebalance protocol (KIP-1071) the group coordinator on the broker assigns the tasks and
Kafka Streams ignores `task.assignor.class`: the smoothscale-streams bridge in the app does nothing, and the
operator's plan runs only if every broker loads smoothscale's broker-side assignor (KIP-1357, listed in the
broker config `group.streams.assignors`; any broker may become the group's coordinator). An app declares
its protocol in `spec.kafka.groupProtocol`; the operator reads every broker's `group.streams.assignors`
with the rest of Kafka, and this module decides (pure) the `StreamsAssignorMissing` condition and the
Events that say what is missing and what to do.
"""

from __future__ import annotations

from collections.abc import Mapping

from smoothscale.contract import streams_protocol as names

from ..resource import GroupProtocol, StreamsAppSpec
from .events import AppEvent, EventType
from .status import Problem, StreamsAssignorCheck

REASON = "StreamsAssignorMissing"
INSTALL = (
    "to fix it, install the plugin on every broker (docs/streams-protocol.md, 'Installing the plugin on a "
    "cluster'): put "
    "smoothscale-broker-assignor.jar on the broker's class path, set group.streams.assignors="
    f"{names.BUILT_IN_ASSIGNOR},{names.ASSIGNOR_CLASS} and the JVM system property "
    f"{names.PLANS_BOOTSTRAP_PROPERTY}=<the cluster's bootstrap servers>, then roll the brokers; or run the "
    "app with group.protocol=classic and the smoothscale-streams bridge"
)


def loads_plugin(assignors: str | None) -> bool:
    """Whether a broker's `group.streams.assignors` value lists smoothscale's assignor class."""
    return assignors is not None and names.ASSIGNOR_CLASS in (a.strip() for a in assignors.split(","))


def check(
    spec: StreamsAppSpec | None, assignors: Mapping[int, str | None] | None
) -> StreamsAssignorCheck | None:
    """None for an app that does not run the streams protocol; else whether each broker (`assignors`: node
    id -> its `group.streams.assignors`, None before they were read) loads the plugin."""
    if spec is None or spec.kafka is None or spec.kafka.group_protocol is not GroupProtocol.STREAMS:
        return None
    if not assignors:
        return StreamsAssignorCheck(checked=False)
    lacking = sorted(node for node, value in assignors.items() if not loads_plugin(value))
    if not lacking:
        return StreamsAssignorCheck(checked=True)
    brokers = ", ".join(
        f"{node} ({names.BROKER_ASSIGNORS_CONFIG}="
        f"{assignors[node] if assignors[node] is not None else 'unknown to this broker: Kafka before 4.4'})"
        for node in lacking
    )
    message = (
        "the app runs group.protocol=streams (spec.kafka.groupProtocol), so the brokers assign its tasks "
        f"and Kafka Streams ignores the smoothscale-streams bridge; but broker(s) {brokers} do not load "
        f"smoothscale's assignor {names.ASSIGNOR_CLASS}: the group gets Kafka's built-in assignment (no "
        f"warmups, no zones), not the operator's plan; {INSTALL}"
    )
    return StreamsAssignorCheck(checked=True, problem=Problem(REASON, message))


def events(before: StreamsAssignorCheck | None, after: StreamsAssignorCheck | None) -> list[AppEvent]:
    """A Warning when the plugin is found missing (first, or on other brokers), a Normal Event once every
    broker loads it after it was missing. `before` is the last check that read the brokers: a read still
    pending (after the cluster changed) says nothing, so a fix is announced when it is seen."""
    if after is None or not after.checked:
        return []
    was = before.problem if before is not None else None
    if after.problem is not None and after.problem != was:
        return [AppEvent(EventType.WARNING, REASON, after.problem.message)]
    if was is not None and after.problem is None:
        message = f"every broker now loads smoothscale's assignor {names.ASSIGNOR_CLASS}"
        return [AppEvent(EventType.NORMAL, "StreamsAssignorInstalled", message)]
    return []


def remembered(
    before: StreamsAssignorCheck | None, after: StreamsAssignorCheck | None
) -> StreamsAssignorCheck | None:
    """What the next round's `events` compares with: the last check that read the brokers."""
    return before if after is not None and not after.checked else after
