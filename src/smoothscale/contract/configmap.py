"""The one codec between a publication and the assignment ConfigMap `<app>-assignment` (Contract 3).

`binaryData[ASSIGNMENT_KEY]` holds the gzip'd JSON of the publication, `data[GENERATION_KEY]` its generation
in plain text (for people, and for pods that only poll it). The API carries binaryData as base64; a mounted
volume holds the raw bytes. The operator, the client library, the sandbox's pods and the benchmarks all read
and write through this module, so every reader applies the same checks: anything that does not decode to a
publication whose generation matches the readable `generation` key is `CorruptAssignment`. Fields this
release does not know are ignored, and a publication of a newer contract version than this release follows
is `NewerAssignment` (`version.py` has the rule).
"""

from __future__ import annotations

import base64
import binascii
import gzip
import zlib
from collections.abc import Mapping

from pydantic import BaseModel, ValidationError

from .publication import Publication
from .shared_names import ASSIGNMENT_KEY, GENERATION_KEY
from .version import UNVERSIONED, NewerContract, require_followable


class CorruptAssignment(ValueError):
    """The ConfigMap holds no valid publication (missing keys, bad base64 or gzip, invalid JSON, mismatch)."""


class NewerAssignment(CorruptAssignment):
    """The publication follows a newer contract version than this release: refused whole, as corrupt
    ones are, with a message naming both versions and what to upgrade."""


class _StatedVersion(BaseModel):
    """Only the version a publication states, for explaining one that does not validate."""

    version: int = UNVERSIONED


def encode_publication(publication: Publication) -> bytes:
    """Compact bytes for the assignment ConfigMap: gzip'd JSON, about 4 bytes a task copy at 50,000 tasks,
    so the largest apps stay far below Kubernetes' 1 MiB object limit."""
    return gzip.compress(publication.model_dump_json(by_alias=True).encode(), mtime=0)


def decode_publication(data: bytes) -> Publication:
    """Inverse of `encode_publication`; raises CorruptAssignment on anything that is not a publication."""
    try:
        text = gzip.decompress(data)
    except (OSError, EOFError, zlib.error) as error:  # bad header, truncation, or a corrupt deflate stream
        raise CorruptAssignment(f"assignment is not gzip data: {error}") from error
    try:
        publication = Publication.model_validate_json(text, extra="ignore")
    except ValidationError as error:
        # A newer contract may have changed what a field means: its version explains the failure better.
        _require_followable(_stated_version(text))
        raise CorruptAssignment(f"undecodable assignment: {_first_line(error)}") from error
    _require_followable(publication.version)
    return publication


def _stated_version(text: bytes) -> int:
    """The version a publication that does not validate states (UNVERSIONED when it states none usable)."""
    try:
        return _StatedVersion.model_validate_json(text).version
    except ValidationError:
        return UNVERSIONED


def _require_followable(version: int) -> None:
    try:
        require_followable(
            version,
            payload="the assignment's publication",
            upgrade="the smoothscale client library or bridge in the app's image to the operator's release "
            "(if the operator says this, the operator itself)",
        )
    except NewerContract as error:
        raise NewerAssignment(str(error)) from error


def configmap_content(publication: Publication) -> dict[str, dict[str, str]]:
    """The `data` and `binaryData` of the ConfigMap that publishes `publication`, as the API takes them."""
    encoded = base64.b64encode(encode_publication(publication)).decode("ascii")
    return {
        "data": {GENERATION_KEY: str(publication.generation)},
        "binaryData": {ASSIGNMENT_KEY: encoded},
    }


def from_configmap(body: Mapping[str, object]) -> Publication:
    """The publication in a ConfigMap object as the API returns it (camelCase keys, base64 binaryData)."""
    binary = body.get("binaryData") or {}
    data = body.get("data") or {}
    if not isinstance(binary, Mapping) or not isinstance(data, Mapping):
        raise CorruptAssignment("binaryData and data must be maps")
    encoded = binary.get(ASSIGNMENT_KEY)
    if not isinstance(encoded, str):
        raise CorruptAssignment(f"binaryData has no {ASSIGNMENT_KEY!r}")
    try:
        raw = base64.b64decode(encoded, validate=True)
    except (binascii.Error, ValueError) as error:
        raise CorruptAssignment(f"binaryData[{ASSIGNMENT_KEY!r}] is not base64: {error}") from error
    return decode_checked(raw, data.get(GENERATION_KEY))


def decode_checked(raw: bytes, generation: object) -> Publication:
    """The publication in `raw` (the ConfigMap's assignment bytes), checked against the ConfigMap's
    `generation` value (None: the key is absent; the publication carries its own generation)."""
    publication = decode_publication(raw)
    if generation is not None and str(generation).strip() != str(publication.generation):
        raise CorruptAssignment(
            f"data[{GENERATION_KEY!r}]={generation!r} but the assignment is generation "
            f"{publication.generation}"
        )
    return publication


def _first_line(error: Exception) -> str:
    """pydantic's messages run to many lines; a log line needs the first."""
    return str(error).splitlines()[0] if str(error) else type(error).__name__
