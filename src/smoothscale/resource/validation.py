"""Everything wrong with a `StreamsApp` spec, as messages that name the field.

The API server enforces the CRD's schema, but the operator cannot count on it: the API emulator used in
tests and the demo validates nothing, objects written before a schema change are not re-validated, and some
rules (a topic read by two subtopologies, rack lists of the wrong length) have no affordable CEL form. So
the operator checks every spec itself and reports the result in the `InvalidSpec` condition, one message
per problem, each starting with the field's path (`spec.assignment.maxWarmupReplicas: ...`).
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from pydantic import ValidationError
from pydantic_core import ErrorDetails

from .durations import parse_duration
from .kafka import KafkaSpec, SaslMechanism
from .planner import max_surge_pods
from .spec import Runtime, StreamsAppSpec, UpdateStrategy

__all__ = ["InvalidSpecError", "load_spec", "semantic_problems", "spec_problems"]

_MIN_PROBING_INTERVAL_SECONDS = 1.0
_IDENTIFIER = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_EXTENSION_NAME = re.compile(r"^[A-Za-z]+$")
_GENERIC_SUBJECT = re.compile(r"^(?:Input|List|String|Value|Dictionary|Object) should")
_ERROR_WORDING = {
    "missing": "is required",
    "extra_forbidden": "is not a field here (misspelt?)",
}


class InvalidSpecError(ValueError):
    """The spec cannot be acted on; `problems` holds one message per problem, each naming its field."""

    def __init__(self, problems: Sequence[str]) -> None:
        self.problems: tuple[str, ...] = tuple(problems)
        super().__init__("; ".join(self.problems))


def load_spec(raw: Mapping[str, Any]) -> StreamsAppSpec:
    """Parse and check `raw` (an object's `spec`), or raise `InvalidSpecError` listing every problem."""
    try:
        spec = StreamsAppSpec.model_validate(raw)
    except ValidationError as error:
        raise InvalidSpecError([_describe(e) for e in error.errors(include_url=False)]) from error
    problems = semantic_problems(spec)
    if problems:
        raise InvalidSpecError(problems)
    return spec


def spec_problems(raw: Mapping[str, Any]) -> list[str]:
    """Every problem with `raw` (an object's `spec`); empty when the operator can act on it."""
    try:
        load_spec(raw)
    except InvalidSpecError as error:
        return list(error.problems)
    return []


def semantic_problems(spec: StreamsAppSpec) -> list[str]:
    """Problems of a spec whose every field is well-formed on its own: rules across fields."""
    return [
        *_topology_problems(spec),
        *_rack_problems(spec),
        *_assignment_problems(spec),
        *_scaling_problems(spec),
        *_autoscaling_problems(spec),
        *_template_problems(spec),
        *_kafka_problems(spec),
        *_failover_problems(spec),
    ]


def _topology_problems(spec: StreamsAppSpec) -> Iterator[str]:
    if not spec.topology.subtopologies and spec.runtime is not Runtime.KAFKA_STREAMS:
        yield (
            "spec.topology.subtopologies: required for runtime ClientLibrary (list every subtopology with "
            "its partitions); only runtime KafkaStreams apps report their own topology"
        )
    first_with_name: dict[str, int] = {}
    reader_of_topic: dict[str, int] = {}
    for index, sub in enumerate(spec.topology.subtopologies):
        where = f"spec.topology.subtopologies[{index}]"
        if sub.name in first_with_name:
            first = first_with_name[sub.name]
            yield (
                f"{where}.name: {sub.name!r} is already the name of subtopologies[{first}]; "
                "names must be unique because task ids are <name>_<partition>"
            )
        else:
            first_with_name[sub.name] = index
        for topic in sub.input_topics:
            reader = reader_of_topic.setdefault(topic, index)
            if reader != index:
                yield (
                    f"{where}.inputTopics: topic {topic!r} is already an input of subtopologies[{reader}]; "
                    "a topic is read by one subtopology only"
                )
        if len(set(sub.input_topics)) != len(sub.input_topics):
            yield f"{where}.inputTopics: lists a topic more than once"


def _rack_problems(spec: StreamsAppSpec) -> Iterator[str]:
    partitions_of_topic = {
        topic: (sub.name, sub.partitions) for sub in spec.topology.subtopologies for topic in sub.input_topics
    }
    for topic, per_partition in spec.racks.items():
        where = f"spec.racks{_key(topic)}"
        if topic not in partitions_of_topic:
            yield f"{where}: {topic!r} is not an input topic of any subtopology"
            continue
        name, partitions = partitions_of_topic[topic]
        if len(per_partition) != partitions:
            yield (
                f"{where}: lists {len(per_partition)} partitions but subtopology {name!r} reads it with "
                f"{partitions}; give one list of zones per partition"
            )


def _assignment_problems(spec: StreamsAppSpec) -> Iterator[str]:
    interval = spec.assignment.probing_interval
    if parse_duration(interval) < _MIN_PROBING_INTERVAL_SECONDS:
        yield f"spec.assignment.probingInterval: must be at least 1s (got {interval!r})"


def _scaling_problems(spec: StreamsAppSpec) -> Iterator[str]:
    scaling = spec.scaling
    if (
        scaling.update_strategy is UpdateStrategy.SWAP
        and max_surge_pods(scaling.max_surge, max(spec.replicas, 1)) < 1
    ):
        yield (
            f"spec.scaling.maxSurge: must allow at least one extra pod when updateStrategy is Swap "
            f"(got {scaling.max_surge!r})"
        )


def _autoscaling_problems(spec: StreamsAppSpec) -> Iterator[str]:
    autoscaling = spec.autoscaling
    if autoscaling.max_replicas is not None and autoscaling.min_replicas > autoscaling.max_replicas:
        yield (
            f"spec.autoscaling.minReplicas: must not exceed maxReplicas (got {autoscaling.min_replicas} > "
            f"{autoscaling.max_replicas}); lower minReplicas or raise maxReplicas"
        )


def _template_problems(spec: StreamsAppSpec) -> Iterator[str]:
    """The template is free-form (the API server validates the pods), but the parts the operator merges its
    own into must have their Kubernetes shape, or building a pod would fail instead of the spec being
    reported: maps of labels and annotations, lists of named objects for containers, env and volumes, and
    objects for security contexts."""
    template = spec.template.model_dump(mode="json")
    where = "spec.template"
    for key in ("labels", "annotations"):
        value = (template.get("metadata") or {}).get(key)
        if value is not None and not _is_string_map(value):
            yield f"{where}.metadata.{key}: must be a map of strings"
    pod_spec = template["spec"]
    yield from _named_objects(pod_spec.get("volumes"), f"{where}.spec.volumes")
    if not isinstance(pod_spec.get("securityContext") or {}, dict):
        yield f"{where}.spec.securityContext: must be an object"
    for key in ("containers", "initContainers"):
        yield from _named_objects(pod_spec.get(key), f"{where}.spec.{key}")
        for index, container in enumerate(pod_spec.get(key) or []):
            if not isinstance(container, dict):
                continue
            yield from _named_objects(container.get("env"), f"{where}.spec.{key}[{index}].env")
            if not isinstance(container.get("securityContext") or {}, dict):
                yield f"{where}.spec.{key}[{index}].securityContext: must be an object"


def _kafka_problems(spec: StreamsAppSpec) -> Iterator[str]:
    kafka = spec.kafka
    if kafka is None:
        return
    where = "spec.kafka"
    protocol = kafka.security_protocol
    if protocol.uses_sasl and kafka.sasl_mechanism is None:
        yield f"{where}.saslMechanism: is required with securityProtocol {protocol}"
    if protocol.uses_sasl and kafka.secret_ref is None:
        yield f"{where}.secretRef: is required with securityProtocol {protocol} (for the SASL credentials)"
    if not protocol.uses_sasl and kafka.sasl_mechanism is not None:
        yield f"{where}.saslMechanism: needs securityProtocol SASL_PLAINTEXT or SASL_SSL (got {protocol})"
    yield from _oauthbearer_problems(kafka)
    for field, value in (("refreshInterval", kafka.refresh_interval), ("timeout", kafka.timeout)):
        if parse_duration(value) < 1.0:
            yield f"{where}.{field}: must be at least 1s (got {value!r})"
    stores: dict[str, int] = {}
    for index, sub in enumerate(spec.topology.subtopologies):
        for store in sub.stores:
            owner = stores.setdefault(store, index)
            if owner != index:
                yield (
                    f"spec.topology.subtopologies[{index}].stores: store {store!r} is already listed by "
                    f"subtopologies[{owner}]; a store belongs to one subtopology"
                )


def _oauthbearer_problems(kafka: KafkaSpec) -> Iterator[str]:
    where = "spec.kafka.oauthbearer"
    oauth, mechanism = kafka.oauthbearer, kafka.sasl_mechanism
    if mechanism is SaslMechanism.OAUTHBEARER and oauth is None:
        yield f"{where}: is required with saslMechanism OAUTHBEARER (at least its tokenEndpointUrl)"
    if oauth is None:
        return
    if mechanism is not SaslMechanism.OAUTHBEARER:
        yield f"{where}: needs saslMechanism OAUTHBEARER (got {mechanism or 'none'})"
    for name in oauth.extensions:
        if not _EXTENSION_NAME.fullmatch(name):
            yield f"{where}.extensions: {name!r} is not an extension name (letters only, RFC 7628 3.1)"
        elif name == "auth":
            yield f"{where}.extensions: 'auth' is reserved by SASL/OAUTHBEARER for the token itself"


def _failover_problems(spec: StreamsAppSpec) -> Iterator[str]:
    if spec.failover.lease_seconds is not None and spec.runtime is Runtime.KAFKA_STREAMS:
        yield (
            "spec.failover.leaseSeconds: only for runtime ClientLibrary; a runtime KafkaStreams app fails "
            "over through its consumer group's session.timeout.ms (Kafka removes a silent member, and the "
            "bridge puts its actives on their most caught-up standbys): leave it out"
        )


def _named_objects(value: object, where: str) -> Iterator[str]:
    if value is None:
        return
    if not isinstance(value, list):
        yield f"{where}: must be a list"
        return
    for index, item in enumerate(value):
        if not isinstance(item, dict) or not isinstance(item.get("name"), str):
            yield f"{where}[{index}]: must be an object with a string name"


def _is_string_map(value: object) -> bool:
    return isinstance(value, dict) and all(isinstance(v, str) for v in value.values())


def _describe(error: ErrorDetails) -> str:
    """`spec.<camelCase path>: <what is wrong>` for one pydantic error."""
    path = "spec" + "".join(_key(part) for part in error["loc"])
    wording = _ERROR_WORDING.get(error["type"])
    if wording is None:
        # "Input should be ...", "List should have ..." read better without their subject after the path.
        wording, generic = _GENERIC_SUBJECT.subn("should", error["msg"].replace(" after validation", ""))
        if generic and isinstance(error["input"], str | int | float | bool):
            wording += f" (got {error['input']!r})"
    return f"{path}: {wording}"


def _key(part: str | int) -> str:
    if isinstance(part, int):
        return f"[{part}]"
    if _IDENTIFIER.match(part):
        return f".{part}"
    return f"[{part!r}]"
