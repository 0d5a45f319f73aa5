"""The identity of one `StreamsApp` object, and the owner reference its pods, claims and ConfigMap carry."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from smoothscale.resource import api_kind


@dataclass(frozen=True, slots=True)
class AppRef:
    namespace: str
    name: str
    uid: str

    def __str__(self) -> str:
        return f"{self.namespace}/{self.name}"

    def owner_reference(self) -> dict[str, Any]:
        """Owned objects go with the app (Kubernetes' garbage collector), and `kubectl` shows their owner."""
        return {
            "apiVersion": api_kind.API_VERSION,
            "kind": api_kind.KIND,
            "name": self.name,
            "uid": self.uid,
            "controller": True,
            "blockOwnerDeletion": True,
        }
