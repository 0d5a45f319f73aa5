"""The `StreamsApp` CustomResourceDefinition, generated from the resource models.

Generated rather than written by hand so that the schema the API server enforces and the models the operator
parses with cannot drift apart; `crds/streamsapp.yaml` is this module's output, checked in for `kubectl
apply` and, as the same file, in the Helm chart's `crds/`; tests fail when either copy is stale.
"""

from __future__ import annotations

import inspect
from typing import Any

import yaml

from . import api_kind
from .app import StreamsApp
from .openapi import structural_schema
from .spec import StreamsAppSpec
from .status import StreamsAppStatus

__all__ = ["REGENERATE_COMMAND", "build_crd", "crd_yaml", "openapi_schema"]

REGENERATE_COMMAND = (
    "smoothscale crd --output crds/streamsapp.yaml --output charts/smoothscale/crds/streamsapp.yaml"
)

_HEADER = (
    "# The StreamsApp CustomResourceDefinition. Generated from smoothscale.resource: do not edit.\n"
    f"# Regenerate with: {REGENERATE_COMMAND}\n"
)

_PRINTER_COLUMNS: list[dict[str, Any]] = [
    {"name": "Replicas", "type": "integer", "jsonPath": ".spec.replicas", "description": "Desired pods."},
    {"name": "Ready", "type": "integer", "jsonPath": ".status.readyReplicas", "description": "Ready pods."},
    {
        "name": "Stable",
        "type": "string",
        "jsonPath": '.status.conditions[?(@.type=="Stable")].status',
        "description": "Whether the assignment has converged (no warmups, no moves pending).",
    },
    {
        "name": "Warmups",
        "type": "integer",
        "jsonPath": ".status.assignment.warmupTasks",
        "description": "Warmup copies still restoring state.",
    },
    {"name": "Lag", "type": "integer", "jsonPath": ".status.lag.total", "description": "Total lag."},
    {
        "name": "Phase",
        "type": "string",
        "jsonPath": ".status.phase",
        "description": "One-word summary.",
        "priority": 1,
    },
    {
        "name": "Generation",
        "type": "integer",
        "jsonPath": ".status.assignment.generation",
        "description": "Assignment generation published last.",
        "priority": 1,
    },
    {"name": "Age", "type": "date", "jsonPath": ".metadata.creationTimestamp"},
]


def openapi_schema() -> dict[str, Any]:
    """The version's `openAPIV3Schema`: the conventional envelope around the spec's and status's schemas."""
    return {
        "description": _first_paragraph(StreamsApp),
        "type": "object",
        "required": ["spec"],
        "properties": {
            "apiVersion": {
                "description": "Versioned schema of this representation of the object.",
                "type": "string",
            },
            "kind": {"description": "REST resource this object represents.", "type": "string"},
            "metadata": {"type": "object"},
            "spec": structural_schema(StreamsAppSpec),
            "status": structural_schema(StreamsAppStatus),
        },
    }


def build_crd() -> dict[str, Any]:
    """The CustomResourceDefinition object (apiextensions.k8s.io/v1), ready to dump or to apply."""
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {
            "name": api_kind.CRD_NAME,
            "labels": {"app.kubernetes.io/name": "smoothscale", "app.kubernetes.io/part-of": "smoothscale"},
        },
        "spec": {
            "group": api_kind.GROUP,
            "names": {
                "kind": api_kind.KIND,
                "listKind": api_kind.LIST_KIND,
                "plural": api_kind.PLURAL,
                "singular": api_kind.SINGULAR,
                "shortNames": list(api_kind.SHORT_NAMES),
                "categories": list(api_kind.CATEGORIES),
            },
            "scope": "Namespaced",
            "versions": [
                {
                    "name": api_kind.VERSION,
                    "served": True,
                    "storage": True,
                    "subresources": {
                        "status": {},
                        "scale": {
                            "specReplicasPath": ".spec.replicas",
                            "statusReplicasPath": ".status.replicas",
                            "labelSelectorPath": ".status.selector",
                        },
                    },
                    "additionalPrinterColumns": _PRINTER_COLUMNS,
                    "schema": {"openAPIV3Schema": openapi_schema()},
                }
            ],
        },
    }


def crd_yaml() -> str:
    """The CRD as the YAML document checked in at `crds/streamsapp.yaml`; stable byte for byte."""
    body: str = yaml.safe_dump(build_crd(), sort_keys=False, width=110, allow_unicode=True)
    return _HEADER + body


def _first_paragraph(model: type) -> str:
    return (inspect.getdoc(model) or "").split("\n\n", 1)[0].replace("\n", " ")
