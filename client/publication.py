"""Reading a publication out of the assignment ConfigMap, as the API returns it or as a volume mounts it.

Both forms carry the same two keys (`contract.ASSIGNMENT_KEY`, `contract.GENERATION_KEY`); the API base64s
binaryData, a mounted volume holds the raw bytes. Anything that does not decode to a publication whose
generation matches the readable `generation` key is corrupt: the caller keeps its current work.
"""

from __future__ import annotations

import base64
import binascii
from collections.abc import Mapping
from pathlib import Path

from smoothscale.assignor.handover import Publication, decode_publication

from . import contract


class CorruptAssignment(ValueError):
    """The ConfigMap holds no valid publication (missing keys, bad base64 or gzip, invalid JSON, mismatch)."""


def from_configmap(body: Mapping[str, object]) -> Publication:
    """The publication in a ConfigMap object as the API returns it (camelCase keys, base64 binaryData)."""
    binary = body.get("binaryData") or {}
    data = body.get("data") or {}
    if not isinstance(binary, Mapping) or not isinstance(data, Mapping):
        raise CorruptAssignment("binaryData and data must be maps")
    encoded = binary.get(contract.ASSIGNMENT_KEY)
    if not isinstance(encoded, str):
        raise CorruptAssignment(f"binaryData has no {contract.ASSIGNMENT_KEY!r}")
    try:
        raw = base64.b64decode(encoded, validate=True)
    except (binascii.Error, ValueError) as error:
        raise CorruptAssignment(f"binaryData[{contract.ASSIGNMENT_KEY!r}] is not base64: {error}") from error
    return _checked(raw, data.get(contract.GENERATION_KEY))


def from_mounted_dir(directory: Path) -> Publication:
    """The publication in a mounted ConfigMap volume (one file per key, binary keys as raw bytes)."""
    directory = _one_version(directory)
    try:
        raw = (directory / contract.ASSIGNMENT_KEY).read_bytes()
    except OSError as error:
        raise CorruptAssignment(f"cannot read {directory / contract.ASSIGNMENT_KEY}: {error}") from error
    try:
        generation: str | None = (directory / contract.GENERATION_KEY).read_text().strip()
    except OSError:
        generation = None  # optional: the publication carries its own generation
    return _checked(raw, generation)


def _one_version(directory: Path) -> Path:
    """The folder of the version mounted now. A kubelet swaps versions by renaming a symlink (`..data`, or the
    mount itself in a test): reading both keys through the link could pair one version's assignment with the
    next one's generation (or its missing generation, which would let a mismatched publication through)."""
    data = directory / "..data"
    return (data if data.is_symlink() else directory).resolve()


def _checked(raw: bytes, generation: object) -> Publication:
    try:
        publication = decode_publication(raw)
    except ValueError as error:
        raise CorruptAssignment(f"undecodable assignment: {_first_line(error)}") from error
    if generation is not None and str(generation).strip() != str(publication.generation):
        raise CorruptAssignment(
            f"data[{contract.GENERATION_KEY!r}]={generation!r} but the assignment is generation "
            f"{publication.generation}"
        )
    return publication


def _first_line(error: Exception) -> str:
    """pydantic's messages run to many lines; a log line needs the first."""
    return str(error).splitlines()[0] if str(error) else type(error).__name__
