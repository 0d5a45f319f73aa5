"""Paths and object builders shared by the emulator tests (a uniquely named module: no package here)."""

from __future__ import annotations

from typing import Any

SAPPS = "/apis/smoothscale.io/v1alpha1/namespaces/default/streamsapps"
PODS = "/api/v1/namespaces/default/pods"
CONFIGMAPS = "/api/v1/namespaces/default/configmaps"
MERGE = {"Content-Type": "application/merge-patch+json"}
JSON_PATCH = {"Content-Type": "application/json-patch+json"}


def sapp(name: str, replicas: int = 1, **metadata: Any) -> dict[str, Any]:
    return {
        "apiVersion": "smoothscale.io/v1alpha1",
        "kind": "StreamsApp",
        "metadata": {"name": name, **metadata},
        "spec": {"replicas": replicas},
    }


def pod(name: str, **labels: str) -> dict[str, Any]:
    spec = {"containers": [{"name": "app", "image": "worker"}]}
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "labels": labels}, "spec": spec}
