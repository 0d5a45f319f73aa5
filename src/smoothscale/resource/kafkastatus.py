"""`status.kafka`: what the operator last read from the app's Kafka cluster (with `spec.kafka`).

For people and dashboards: the app's consumer group as the group coordinator describes it, and where the
planner's rack and changelog inputs came from. Kafka's DescribeGroups answer carries no generation for a
classic group, so none is shown; the assignment generation the operator publishes is `status.assignment`.
"""

from __future__ import annotations

from pydantic import Field

from .base import StatusModel
from .fields import Timestamp

__all__ = ["ChangelogStatus", "ConsumerGroupMember", "ConsumerGroupStatus", "KafkaStatus"]


class ChangelogStatus(StatusModel):
    """One changelog topic of the app, as last read."""

    topic: str = Field(
        description="The topic: <applicationId>-<store>-changelog, or the source topic a KTable restores "
        "from under topology.optimization."
    )
    subtopology: str = Field(description="The subtopology whose tasks it belongs to.")
    end_offsets: int = Field(
        0, ge=0, description="Sum of its partitions' end offsets: the records a task restores from scratch."
    )
    unreadable: str | None = Field(
        None,
        description="Why its end offsets could not be read and what to do: its tasks' lags are then unknown "
        "and none of them moves to another pod.",
    )


class ConsumerGroupMember(StatusModel):
    """One member of the consumer group (a stream thread's consumer)."""

    member_id: str = Field(description="The member id the coordinator gave it.")
    client_id: str = Field(
        description="Its client.id (Kafka Streams: <application.id>-<uuid>-StreamThread-<n>)."
    )
    host: str = Field("", description="The address it connected from (classic groups).")
    partitions: int = Field(0, ge=0, description="Partitions assigned to it (classic groups).")
    pod: str | None = Field(None, description="Its pod (streams groups: the client tag smoothscale.pod).")
    active_tasks: list[str] = Field(
        default_factory=list, description="Active tasks it runs (streams groups, in Kafka's view)."
    )
    standby_tasks: list[str] = Field(
        default_factory=list,
        description="Standby tasks it keeps, warmups the plugin gives included (streams groups).",
    )


class ConsumerGroupStatus(StatusModel):
    """The app's consumer group (its application.id)."""

    group_id: str = Field(description="The group id, which is the application.id.")
    state: str = Field(description="Stable, PreparingRebalance, CompletingRebalance, Empty, Dead or Unknown.")
    protocol: str = Field(
        "",
        description="The assignment protocol in use (classic Kafka Streams groups: stream); for a streams "
        "group (group.protocol=streams), streams and the broker-side assignor, e.g. streams/smoothscale.",
    )
    coordinator: int | None = Field(None, description="Node id of the broker coordinating the group.")
    members: list[ConsumerGroupMember] = Field(default_factory=list, description="The group's members.")


class KafkaStatus(StatusModel):
    """What the operator last read from Kafka."""

    last_read_time: Timestamp | None = Field(None, description="When Kafka was last read successfully.")
    brokers: int = Field(0, ge=0, description="Brokers in the cluster at the last read.")
    rack_topics: list[str] = Field(
        default_factory=list, description="Input topics whose partitions' racks came from Kafka."
    )
    changelogs: list[ChangelogStatus] = Field(
        default_factory=list, description="Changelog topics whose end offsets size the tasks."
    )
    unmapped_changelog_topics: list[str] = Field(
        default_factory=list,
        description="Changelog topics of the app that no subtopology could be matched to (list the store "
        "in a subtopology's stores).",
    )
    group: ConsumerGroupStatus | None = Field(None, description="The app's consumer group.")
