"""Base classes of the `StreamsApp` models: camelCase on the wire, snake_case in Python, immutable."""

from pydantic import BaseModel, ConfigDict
from pydantic.alias_generators import to_camel


class SpecModel(BaseModel):
    """Base of the spec's models.

    Unknown fields are rejected: the API server prunes them silently, so a misspelt setting would otherwise
    be ignored without a word; the operator reports it in the `InvalidSpec` condition instead (and catches
    it when the object never went through a schema, as with the API emulator). Dumps use the camelCase
    aliases by default because every dump of these models goes to Kubernetes or to a person reading YAML.
    """

    model_config = ConfigDict(
        alias_generator=to_camel,
        populate_by_name=True,
        serialize_by_alias=True,
        extra="forbid",
        frozen=True,
        validate_default=True,
    )


class StatusModel(BaseModel):
    """Base of the status's models.

    Unknown fields are ignored, not rejected: during an upgrade an older operator may read a status that a
    newer one wrote, and must not fail on a field it does not know.
    """

    model_config = ConfigDict(
        alias_generator=to_camel,
        populate_by_name=True,
        serialize_by_alias=True,
        extra="ignore",
        frozen=True,
    )
