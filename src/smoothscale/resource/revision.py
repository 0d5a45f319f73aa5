"""The revision of a StreamsApp's pod template: what tells the pods of the current template from the others
(a swap replaces the others), stamped on every pod the operator creates."""

from __future__ import annotations

import hashlib
import json

from .spec import StreamsAppSpec


def template_revision(spec: StreamsAppSpec) -> str:
    """A short, stable hash of the pod template: pods built from another template have another revision."""
    canonical = json.dumps(spec.template.model_dump(mode="json"), sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(canonical.encode()).hexdigest()[:10]
