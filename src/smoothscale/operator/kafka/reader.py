"""One read of the app's Kafka cluster with confluent-kafka's AdminClient (blocking: call it in a thread).

Why confluent-kafka: its AdminClient (librdkafka underneath, shipped inside the wheels) has every call this
needs in one client — DescribeCluster for the brokers' racks, DescribeTopics for the partitions' replicas,
ListOffsets for end offsets, DescribeConsumerGroups — with per-request timeouts and SASL/TLS from plain
properties (PEM strings, so no key files on disk). It is maintained by Confluent, follows Kafka's releases
and is the client Kafka's own documentation points Python users to. aiokafka's admin client lacks
DescribeCluster and ListOffsets-by-spec, and kafka-python is barely maintained.

A fresh client per read keeps credentials current (a rotated Secret is used at the next read) and leaves no
connection behind between reads. Errors become `KafkaReadError` with a CamelCase reason and a message that
names what failed: the bootstrap servers that could not be reached, the user whose login was refused.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import replace
from datetime import datetime
from typing import Any

from confluent_kafka import KafkaError, KafkaException, TopicCollection, TopicPartition
from confluent_kafka.admin import (  # type: ignore[attr-defined]
    AdminClient,
    ConfigResource,
    OffsetSpec,
    ResourceType,
)

from smoothscale.contract.publication import Publication
from smoothscale.contract.streams_protocol import ASSIGNOR_NAME, ASSIGNOR_NAME_CONFIG, BROKER_ASSIGNORS_CONFIG
from smoothscale.control.streamsassignor import loads_plugin

from .groupviews import read_group_view
from .plans import request_assignment
from .streamsgroup import targets
from .view import MISSING, ClusterView, GroupMemberView, GroupView, changelog_store

_AUTHENTICATION = {KafkaError._AUTHENTICATION, KafkaError.SASL_AUTHENTICATION_FAILED}
_NO_GROUP_YET = {
    KafkaError.GROUP_ID_NOT_FOUND,
    KafkaError.NOT_COORDINATOR,
    KafkaError.COORDINATOR_NOT_AVAILABLE,
    KafkaError.COORDINATOR_LOAD_IN_PROGRESS,
}
STALE_GROUP_VIEW = 30.0
"""Seconds after which a group view is old: the plugin writes one at least every 10 s while it assigns the
group (`GroupViewPublisher.KEEPALIVE`), so an older one means no broker does (the coordinator moved, or it
never assigned the group with the plugin)."""
_NO_TOKEN = "Failed to acquire SASL OAUTHBEARER token"
"""How librdkafka's OIDC grant reports a token request refused (or unanswered), then quoting the answer."""
_UNREACHABLE = {KafkaError._TRANSPORT, KafkaError._ALL_BROKERS_DOWN, KafkaError._RESOLVE}


class KafkaReadError(Exception):
    """Kafka could not be read; `reason` is CamelCase for the condition, the message is for people."""

    def __init__(self, reason: str, message: str) -> None:
        super().__init__(message)
        self.reason = reason
        self.message = message


def read_cluster(
    config: Mapping[str, str],
    *,
    application_id: str,
    input_topics: Sequence[str],
    timeout: float,
    now: datetime,
    streams_protocol: bool = False,
    published: Publication | None = None,
    changelogs: Collection[str] = (),
) -> ClusterView:
    """Brokers and racks, the input topics' replicas, the changelogs' end offsets and the group; `changelogs`:
    the app's changelog topics as its topology names them (the ones missing are unreadable). For an app
    on `group.protocol=streams` (`streams_protocol`) the group is the streams group as the broker plugin
    published it (`groupviews`), with every broker's `group.streams.assignors`; when the group's target
    assignment is not the `published` plan, the coordinator is asked for a new one (`targets`)."""
    errors: list[KafkaError] = []
    settings: dict[str, Any] = {
        **config,
        "error_cb": errors.append,
        "log_level": 0,  # failures reach the caller as KafkaReadError, not as a line per retry on stderr
        "socket.connection.setup.timeout.ms": int(timeout * 1000),
    }
    try:
        admin = AdminClient(settings)
    except (KafkaException, ValueError, TypeError) as error:
        raise KafkaReadError(
            "KafkaConfigInvalid", f"the Kafka client rejects its settings: {error}"
        ) from error
    try:
        view = _read(
            admin, application_id, input_topics, changelogs, timeout, now, classic_group=not streams_protocol
        )
        if streams_protocol:
            assignors = _streams_assignors(admin, view.brokers, timeout)
            group = None
            if assignors and all(loads_plugin(value) for value in assignors.values()):
                group = read_group_view(config, application_id, timeout=timeout)
                stale = group is None or (now - group.published_at).total_seconds() > STALE_GROUP_VIEW
                if group is None or stale or (published is not None and not targets(group.view, published)):
                    # no broker publishes the group's view (opt the group in and ask for an assignment,
                    # which the plugin, falling back while it has no plan, answers by publishing the view),
                    # or the coordinator's target is not the plan: its assignor answered before its plan
                    # reader had the plan (seen 5 s late on a loaded broker), or a pod was not in the group
                    opt_in = {ASSIGNOR_NAME_CONFIG: ASSIGNOR_NAME}
                    request_assignment(admin, application_id, extra=opt_in, timeout=timeout)
            view = replace(view, streams_assignors=assignors, streams_group=group)
        return view
    except KafkaException as error:
        admin.poll(0)  # serves error_cb: the errors met along the way (refused login, refused connection)
        raise _explain(error, errors, config) from error


def _read(
    admin: AdminClient,
    application_id: str,
    input_topics: Sequence[str],
    expected: Collection[str],
    timeout: float,
    now: datetime,
    *,
    classic_group: bool,
) -> ClusterView:
    cluster = admin.describe_cluster(request_timeout=timeout).result(timeout=timeout + 1)
    brokers = {node.id: node.rack or None for node in cluster.nodes}
    metadata = admin.list_topics(timeout=timeout)
    inputs = sorted(topic for topic in set(input_topics) if topic in metadata.topics)
    replicas: dict[str, list[list[int]]] = {}
    if inputs:
        described = admin.describe_topics(TopicCollection(inputs), request_timeout=timeout)
        for topic, future in described.items():
            partitions = sorted(future.result(timeout=timeout + 1).partitions, key=lambda p: p.id)
            replicas[topic] = [[node.id for node in partition.replicas] for partition in partitions]
    unreadable = {topic: MISSING for topic in expected if topic not in metadata.topics}
    changelogs: dict[str, int] = {}
    for topic, found in metadata.topics.items():
        if topic in expected or changelog_store(application_id, topic) is not None:
            if found.error is not None:
                unreadable[topic] = f"cannot be described: {found.error.str()}"
            else:
                changelogs[topic] = len(found.partitions)
    end_offsets, failed = read_end_offsets(admin, changelogs, timeout)
    unreadable.update(failed)
    return ClusterView(
        read_at=now,
        brokers=brokers,
        replicas=replicas,
        end_offsets=end_offsets,
        group=_group(admin, application_id, timeout) if classic_group else None,
        partitions={topic: len(found.partitions) for topic, found in metadata.topics.items()},
        unreadable=unreadable,
    )


def read_end_offsets(
    admin: AdminClient, partitions: Mapping[str, int], timeout: float
) -> tuple[dict[str, list[int]], dict[str, str]]:
    """Each topic's end offset per partition (`partitions`: topic -> how many), the broker's word; and the
    topics some partition of which could not be read, with Kafka's error. One topic's failure (deleted since
    the metadata was read, no leader, not authorized) leaves the others' offsets read."""
    if not partitions:
        return {}, {}
    wanted = {
        TopicPartition(topic, partition): OffsetSpec.latest()  # type: ignore[no-untyped-call]
        for topic, count in partitions.items()
        for partition in range(count)
    }
    offsets = {topic: [0] * count for topic, count in partitions.items()}
    failed: dict[str, str] = {}
    for partition, future in admin.list_offsets(wanted, request_timeout=timeout).items():
        try:
            offsets[partition.topic][partition.partition] = future.result(timeout=timeout + 1).offset
        except KafkaException as error:
            if not _per_partition(error):
                raise
            failed.setdefault(partition.topic, f"cannot be read: {error.args[0].str()}")
    return {topic: ends for topic, ends in offsets.items() if topic not in failed}, failed


def _per_partition(error: KafkaException) -> bool:
    """Whether a partition's ListOffsets error is the partition's own, not the cluster's (unreachable, no
    answer, a refused login: the whole read fails and says so)."""
    code = error.args[0].code() if error.args and isinstance(error.args[0], KafkaError) else None
    cluster = {*_AUTHENTICATION, *_UNREACHABLE, KafkaError._SSL, KafkaError._TIMED_OUT}
    return code is not None and code not in cluster


def _streams_assignors(admin: AdminClient, brokers: Iterable[int], timeout: float) -> dict[int, str | None]:
    """Each broker's `group.streams.assignors` (None: the broker does not know the setting, Kafka before
    4.4). Every broker is asked: any of them may become the group's coordinator. One request per broker
    (librdkafka allows one BROKER resource per call), all in flight at once."""
    futures = {
        node: admin.describe_configs([_broker(node)], request_timeout=timeout) for node in sorted(brokers)
    }
    found: dict[int, str | None] = {}
    for node, described in futures.items():
        for future in described.values():
            entry = future.result(timeout=timeout + 1).get(BROKER_ASSIGNORS_CONFIG)
            found[node] = entry.value if entry is not None else None
    return found


def _group(admin: AdminClient, group_id: str, timeout: float) -> GroupView | None:
    future = admin.describe_consumer_groups([group_id], request_timeout=timeout)[group_id]
    try:
        group = future.result(timeout=timeout + 1)
    except KafkaException as error:
        if error.args and error.args[0].code() in _NO_GROUP_YET:
            return None  # no such group, or its coordinator is not there yet (no group has ever committed)
        raise
    state = getattr(group.state, "name", str(group.state))
    return GroupView(
        group_id=group_id,
        state=_camel(state),
        protocol=group.partition_assignor or "",
        coordinator=group.coordinator.id if group.coordinator is not None else None,
        members=tuple(
            GroupMemberView(
                member_id=member.member_id,
                client_id=member.client_id,
                host=member.host,
                partitions=len(member.assignment.topic_partitions) if member.assignment else 0,
            )
            for member in group.members
        ),
    )


def _camel(state: str) -> str:
    """PREPARING_REBALANCE -> PreparingRebalance (Kafka's own spelling of group states)."""
    return "".join(word.capitalize() for word in state.split("_"))


def _explain(error: KafkaException, seen: Sequence[KafkaError], config: Mapping[str, str]) -> KafkaReadError:
    """The most telling error: a refused login or an unreachable address reported along the way beats the
    timeout that ended the request."""
    servers = config.get("bootstrap.servers", "?")
    errors = [*seen, *(arg for arg in error.args if isinstance(arg, KafkaError))]
    for found in errors:
        if found.code() in _AUTHENTICATION:
            return KafkaReadError("KafkaAuthenticationFailed", _refused(found, config))
    for found in errors:
        if found.code() == KafkaError._SSL:
            return KafkaReadError("KafkaTLSFailed", f"TLS with Kafka at {servers} failed: {found.str()}")
    for found in errors:
        if found.code() in _UNREACHABLE:
            return KafkaReadError("KafkaUnreachable", f"cannot reach Kafka at {servers}: {found.str()}")
    first = errors[0] if errors else None
    if first is not None and first.code() == KafkaError._TIMED_OUT:
        return KafkaReadError("KafkaUnreachable", f"no answer from Kafka at {servers}: {first.str()}")
    return KafkaReadError("KafkaReadFailed", f"reading Kafka at {servers} failed: {error}")


def _refused(error: KafkaError, config: Mapping[str, str]) -> str:
    """Who was refused, and by whom: Kafka refusing a user's login; with OAUTHBEARER, the token endpoint
    not giving an OAuth client its token (refused or unreachable: librdkafka quotes which) or Kafka
    refusing that token."""
    servers = config.get("bootstrap.servers", "?")
    client = config.get("sasl.oauthbearer.client.id")
    if client is not None:
        endpoint = config.get("sasl.oauthbearer.token.endpoint.url")
        if error.str().startswith(_NO_TOKEN):
            return f"no OAUTHBEARER token for OAuth client {client!r} from {endpoint}: {error.str()}"
        return f"Kafka at {servers} refused the token of OAuth client {client!r} (OAUTHBEARER): {error.str()}"
    user = config.get("sasl.username")
    who = f" as user {user!r} ({config.get('sasl.mechanism')})" if user else ""
    return f"Kafka at {servers} refused the login{who}: {error.str()}"


def _broker(node: int) -> ConfigResource:
    return ConfigResource(ResourceType.BROKER, str(node))
