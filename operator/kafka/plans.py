"""Hands the operator's plan to smoothscale's broker-side streams assignor (group.protocol=streams apps).

The plan is the publication the operator would write into the app's assignment ConfigMap, written instead
(same gzip'd JSON bytes, Contract 3) as the record of key `<application id>` in the compacted topic
`smoothscale-plans`, which the plugin on every broker reads into memory. A write does not by itself make the
coordinator compute a new assignment: `request_assignment` flips the group's `streams.rack.aware.assignment.
tags` config, a change of the group's assignment configurations, which Kafka 4.4 answers with a new target
assignment at the next member heartbeat (docs/streams-protocol.md has the evidence and the delay measured).

Blocking confluent-kafka calls, each bounded by `timeout`: run them off the event loop.
"""

from __future__ import annotations

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


def ensure_plan_topic(admin: AdminClient, *, replication: int = 3, timeout: float = 10) -> None:
    """Create the compacted plan topic (one partition: plans are few and small) unless it exists."""
    if names.PLANS_TOPIC in admin.list_topics(timeout=timeout).topics:
        return
    topic = NewTopic(names.PLANS_TOPIC, 1, replication, config=PLAN_TOPIC_CONFIG)
    try:
        admin.create_topics([topic], operation_timeout=timeout)[names.PLANS_TOPIC].result(timeout=timeout)
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


def request_assignment(admin: AdminClient, group: str, *, timeout: float = 10) -> None:
    """Make the coordinator compute the group's assignment anew (and so read the latest plan): flip the
    group's rack-aware assignment tags between unset and the pod tag that every managed member carries."""
    current = group_configs(admin, group, timeout=timeout).get(names.TRIGGER_CONFIG)
    flipped = None if current else names.POD_TAG
    set_group_configs(admin, group, {names.TRIGGER_CONFIG: flipped}, timeout=timeout)
