"""The identity of one `StreamsApp` object, and the owner reference its pods, claims and ConfigMap carry."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from smoothscale.resource import names as resource_names


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
            "apiVersion": resource_names.API_VERSION,
            "kind": resource_names.KIND,
            "name": self.name,
            "uid": self.uid,
            "controller": True,
            "blockOwnerDeletion": True,
        }
