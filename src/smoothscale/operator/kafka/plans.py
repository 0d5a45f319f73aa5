"""Hands the operator's plan to smoothscale's broker-side streams assignor (group.protocol=streams apps).

The plan is the publication the operator would write into the app's assignment ConfigMap, written instead
(same gzip'd JSON bytes, Contract 3) as the record of key `<application id>` in the compacted topic
`smoothscale-plans`, which the plugin on every broker reads into memory. A write does not by itself make the
coordinator compute a new assignment: `request_assignment` changes the group's `streams.rack.aware.assignment.
tags` config, a change of the group's assignment configurations, which Kafka 4.4 answers with a new target
assignment at the next member heartbeat (docs/streams-protocol.md has the evidence and the delay measured).

Blocking confluent-kafka calls, each bounded by `timeout`: run them off the event loop.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from typing import Any, Final

from confluent_kafka import KafkaException, Producer
from confluent_kafka.admin import (  # type: ignore[attr-defined]
    AdminClient,
    AlterConfigOpType,
    ConfigEntry,
    ConfigResource,
    NewTopic,
    ResourceType,
)

from smoothscale.contract import streams_protocol as names
from smoothscale.contract.configmap import encode_publication
from smoothscale.contract.publication import Publication

PLAN_TOPIC_CONFIG: Final = {"cleanup.policy": "compact", "min.compaction.lag.ms": "0"}
GROUPS_TOPIC_CONFIG: Final = {
    **PLAN_TOPIC_CONFIG,
    "segment.ms": "600000",  # views are rewritten every few seconds: let compaction drop the old ones
    "min.cleanable.dirty.ratio": "0.1",
}


def ensure_plan_topic(admin: AdminClient, *, replication: int = 3, timeout: float = 10) -> None:
    """Create the compacted plan topic and the plugin's group view topic (one partition each: plans and
    views are few and small) unless they exist."""
    metadata = admin.list_topics(timeout=timeout)
    copies = min(replication, len(metadata.brokers))
    wanted = [
        NewTopic(name, 1, copies, config=config)
        for name, config in (
            (names.PLANS_TOPIC, PLAN_TOPIC_CONFIG),
            (names.GROUPS_TOPIC, GROUPS_TOPIC_CONFIG),
        )
        if name not in metadata.topics
    ]
    if not wanted:
        return
    for future in admin.create_topics(wanted, operation_timeout=timeout).values():
        try:
            future.result(timeout=timeout)
        except KafkaException as error:
            if "TOPIC_ALREADY_EXISTS" not in str(error):
                raise


def write_plan(config: Mapping[str, Any], app_id: str, plan: Publication, *, timeout: float = 10) -> None:
    """Write `plan` as app `app_id`'s latest, and wait until the brokers have it (all in-sync replicas)."""
    producer = Producer({**config, "acks": "all", "enable.idempotence": True})
    failures: list[str] = []

    def delivered(error: Any, _message: Any) -> None:
        if error is not None:
            failures.append(str(error))

    producer.produce(
        names.PLANS_TOPIC, key=app_id.encode(), value=encode_publication(plan), on_delivery=delivered
    )
    left = producer.flush(timeout)
    if left or failures:
        reason = failures[0] if failures else f"not acknowledged within {timeout} s"
        raise KafkaException(
            f"writing plan generation {plan.generation} of {app_id} to {names.PLANS_TOPIC}: {reason}"
        )


def group_configs(admin: AdminClient, group: str, *, timeout: float = 10) -> dict[str, str]:
    """The group's configs that are set (not defaults)."""
    resource = ConfigResource(ResourceType.GROUP, group)
    entries = admin.describe_configs([resource])[resource].result(timeout=timeout)
    return {
        name: entry.value
        for name, entry in entries.items()
        if entry.value is not None and not entry.is_default
    }


def set_group_configs(
    admin: AdminClient, group: str, configs: Mapping[str, str | None], *, timeout: float = 10
) -> None:
    """Set (a value) or reset to the default (None) group configs, atomically."""
    entries = [
        ConfigEntry(
            name,
            value or "",
            incremental_operation=AlterConfigOpType.DELETE if value is None else AlterConfigOpType.SET,
        )
        for name, value in configs.items()
    ]
    resource = ConfigResource(ResourceType.GROUP, group, incremental_configs=entries)
    admin.incremental_alter_configs([resource])[resource].result(timeout=timeout)


def opt_in(
    admin: AdminClient, group: str, extra: Mapping[str, str] | None = None, *, timeout: float = 10
) -> None:
    """Make the plugin the group's assignor (`streams.assignor.name`), with any further group configs."""
    set_group_configs(
        admin, group, {names.ASSIGNOR_NAME_CONFIG: names.ASSIGNOR_NAME, **(extra or {})}, timeout=timeout
    )


def request_assignment(
    admin: AdminClient,
    group: str,
    request: str | None = None,
    extra: Mapping[str, str] | None = None,
    *,
    timeout: float = 10,
) -> None:
    """Make the coordinator compute the group's assignment anew (and so read the latest plan): set the
    group's rack-aware assignment tags to a value no earlier request set, `<pod tag>,smoothscale.request.
    <request>` (default: the time in milliseconds), with `extra` group configs in the same request.

    Why a new value each time, not a flip between two: the coordinator compares the configs at a member's
    heartbeat with those of its last assignment, so two flips between two heartbeats (two plans published
    within half a second, seen in the operator's first seconds) cancel out and no assignment follows."""
    value = f"{names.POD_TAG},{names.TRIGGER_PREFIX}{request or time.time_ns() // 1_000_000}"
    set_group_configs(admin, group, {**(extra or {}), names.TRIGGER_CONFIG: value}, timeout=timeout)


def hand_over(config: Mapping[str, Any], group: str, plan: Publication, *, timeout: float = 10) -> None:
    """The operator's publication for an app on the streams protocol: the topics made if missing, the plan
    written, the group opted in to the plugin and asked for a new assignment, in that order (the plugin has
    read the plan before any member's next heartbeat reaches the coordinator)."""
    admin = AdminClient({**config, "log_level": 0})
    ensure_plan_topic(admin, timeout=timeout)
    write_plan(config, group, plan, timeout=timeout)
    opt_in = {names.ASSIGNOR_NAME_CONFIG: names.ASSIGNOR_NAME}
    request_assignment(admin, group, f"g{plan.generation}", opt_in, timeout=timeout)
