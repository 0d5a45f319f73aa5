"""Reading a publication out of a mounted assignment ConfigMap volume (one file per key, binary keys as raw
bytes). The API's form is read by `smoothscale.contract.configmap.from_configmap`; both go through the
contract's one codec, so both apply the same checks."""

from __future__ import annotations

from pathlib import Path

from smoothscale.contract.configmap import CorruptAssignment, decode_checked
from smoothscale.contract.publication import Publication
from smoothscale.contract.shared_names import ASSIGNMENT_KEY, GENERATION_KEY


def from_mounted_dir(directory: Path) -> Publication:
    """The publication in a mounted ConfigMap volume; raises CorruptAssignment for anything else."""
    directory = _one_version(directory)
    try:
        raw = (directory / ASSIGNMENT_KEY).read_bytes()
    except OSError as error:
        raise CorruptAssignment(f"cannot read {directory / ASSIGNMENT_KEY}: {error}") from error
    try:
        generation: str | None = (directory / GENERATION_KEY).read_text().strip()
    except OSError:
        generation = None  # optional: the publication carries its own generation
    return decode_checked(raw, generation)


def _one_version(directory: Path) -> Path:
    """The folder of the version mounted now. A kubelet swaps versions by renaming a symlink (`..data`, or the
    mount itself in a test): reading both keys through the link could pair one version's assignment with the
    next one's generation (or its missing generation, which would let a mismatched publication through)."""
    data = directory / "..data"
    return (data if data.is_symlink() else directory).resolve()
