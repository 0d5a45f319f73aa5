"""Value types of the `StreamsApp` resource that plain pydantic types describe too loosely.

Each type validates in Python with a message a person can act on (it becomes part of an `InvalidSpec`
condition) and carries the JSON schema the API server enforces, so that both reject the same values. The
schema is given explicitly (`WithJsonSchema`) because pydantic's own pattern errors quote the regular
expression instead of saying what was expected.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Annotated, Any

from pydantic import (
    AfterValidator,
    AwareDatetime,
    GetCoreSchemaHandler,
    GetJsonSchemaHandler,
    PlainSerializer,
    PlainValidator,
    WithJsonSchema,
)
from pydantic_core import CoreSchema, PydanticCustomError, core_schema

from .durations import DURATION_PATTERN, DurationError, parse_duration

__all__ = [
    "ConditionReason",
    "ConditionTypeName",
    "Duration",
    "HttpPath",
    "IntOrPercent",
    "Matching",
    "MetricName",
    "Quantity",
    "SubtopologyName",
    "Timestamp",
    "TopicName",
    "Zone",
]


def _string_schema(pattern: str, max_length: int, **extra: Any) -> WithJsonSchema:
    return WithJsonSchema({"type": "string", "pattern": pattern, "maxLength": max_length, **extra})


@dataclass(frozen=True)
class Matching:
    """Annotation for a string that must match `pattern`: names what was `expected` when it does not."""

    pattern: str
    max_length: int
    expected: str

    def __get_pydantic_core_schema__(self, source: Any, handler: GetCoreSchemaHandler) -> CoreSchema:
        return core_schema.no_info_after_validator_function(self._check, handler(source))

    def __get_pydantic_json_schema__(
        self, schema: CoreSchema, handler: GetJsonSchemaHandler
    ) -> dict[str, Any]:
        return {"type": "string", "pattern": self.pattern, "maxLength": self.max_length}

    def _check(self, value: str) -> str:
        if len(value) > self.max_length or not re.fullmatch(self.pattern, value):
            raise PydanticCustomError(
                "invalid_format",
                "{value} is not {expected}",
                {"value": repr(value), "expected": self.expected},
            )
        return value


def _check_duration(value: str) -> str:
    try:
        parse_duration(value)
    except DurationError as error:
        raise PydanticCustomError("invalid_duration", "{reason}", {"reason": str(error)}) from error
    return value


Duration = Annotated[str, AfterValidator(_check_duration), _string_schema(DURATION_PATTERN, 64)]
"""A Kubernetes-style duration string such as `30s`, `10m` or `1h30m`; kept as written, parsed on use."""

_DECIMAL = r"(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))"
# Kubernetes' own quantity grammar (as controller-gen emits it) without the sign: storage is never negative.
_QUANTITY_PATTERN = rf"^{_DECIMAL}(([KMGTPE]i)|[numkMGTPE]|([eE](\+|-)?{_DECIMAL}))?$"
Quantity = Annotated[str, Matching(_QUANTITY_PATTERN, 64, "a Kubernetes quantity such as 512Mi, 10Gi or 1T")]
"""A non-negative Kubernetes resource quantity, as a PersistentVolumeClaim's storage request takes it."""

_PERCENT = re.compile(r"^[0-9]+%$")


def _int_or_percent(value: object) -> int | str:
    # bool is an int in Python but never a number of pods in YAML.
    if isinstance(value, int) and not isinstance(value, bool) and value >= 0:
        return value
    if isinstance(value, str) and _PERCENT.fullmatch(value):
        return value
    raise PydanticCustomError(
        "int_or_percent",
        "{value} is neither a number of pods (e.g. 2) nor a percentage of replicas (e.g. 25%)",
        {"value": repr(value)},
    )


IntOrPercent = Annotated[
    int | str,
    PlainValidator(_int_or_percent),
    WithJsonSchema(
        {
            "anyOf": [{"type": "integer"}, {"type": "string"}],
            "x-kubernetes-int-or-string": True,
            "x-kubernetes-validations": [
                {
                    "rule": "type(self) == int ? self >= 0 : self.matches('^[0-9]+%$')",
                    "message": "must be a non-negative number of pods or a percentage such as 25%",
                }
            ],
        }
    ),
]
"""A number of pods or a percentage of `replicas` (Kubernetes' IntOrString, as in a Deployment's maxSurge)."""

# No underscore: task ids are `<subtopology>_<partition>` and must split back unambiguously.
SubtopologyName = Annotated[
    str,
    Matching(
        r"^[A-Za-z0-9]([A-Za-z0-9.-]{0,61}[A-Za-z0-9])?$",
        63,
        "a subtopology name (1-63 letters, digits, '.' or '-', no '_', starting and ending alphanumeric)",
    ),
]
TopicName = Annotated[
    str, Matching(r"^[A-Za-z0-9._-]+$", 249, "a Kafka topic name (letters, digits, '.', '_', '-')")
]
MetricName = Annotated[
    str,
    Matching(r"^[A-Za-z_:][A-Za-z0-9_:]*$", 200, "a Prometheus metric name such as smoothscale_task_lag"),
]
HttpPath = Annotated[str, Matching(r"^/\S*$", 1024, "an HTTP path starting with '/'")]
Zone = Annotated[str, Matching(r"^\S+$", 253, "a zone name such as eu-west-1a")]

# metav1.Condition's own constraints, so that tools which read conditions generically accept ours.
ConditionTypeName = Annotated[
    str,
    Matching(
        r"^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])$",
        316,
        "a condition type such as Ready",
    ),
]
ConditionReason = Annotated[
    str,
    Matching(r"^[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?$", 1024, "a CamelCase reason such as WarmupsCaughtUp"),
]


def _rfc3339(moment: datetime) -> str:
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


Timestamp = Annotated[AwareDatetime, PlainSerializer(_rfc3339, return_type=str, when_used="json")]
"""An instant written the way Kubernetes writes metav1.Time: UTC, whole seconds, `Z`."""
