"""A minimal OpenAPI v3 index, just enough for kubectl to validate on the server side.

kubectl validates manifests before `create -f` and `apply -f`. It asks `/openapi/v3` whether the server
validates fields itself (a PATCH operation per kind declaring the `fieldValidation` query parameter); if not,
it downloads `/openapi/v2` to validate on the client, and without either it refuses to send anything unless
`--validate=false` is given. Declaring server-side support is honest enough: the emulator accepts any fields,
as a CRD with `x-kubernetes-preserve-unknown-fields` would. A kind registered with a schema (the StreamsApp,
from its CRD) has it in the document, for `kubectl explain`; built-in kinds have none.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

import kmock


def group_version_path(group: str | None, version: str | None) -> str:
    """`api/v1` for the core group, `apis/<group>/<version>` for the others (no leading slash)."""
    return f"apis/{group}/{version}" if group else f"api/{version}"


def index(resources: Iterable[kmock.resource]) -> dict[str, Any]:
    """`/openapi/v3`: one entry per served group-version, pointing at its document."""
    paths = {group_version_path(res.group, res.version) for res in resources if res.version and res.plural}
    return {"paths": {path: {"serverRelativeURL": f"/openapi/v3/{path}"} for path in sorted(paths)}}


def document(
    group: str,
    version: str,
    kinds: Iterable[tuple[kmock.resource, kmock.ResourceInfo]],
    schemas: Mapping[kmock.resource, Mapping[str, Any]] | None = None,
) -> dict[str, Any]:
    """`/openapi/v3/<group-version>`: a PATCH operation per kind that accepts `fieldValidation`, and the
    schema of each kind that has one (a CRD's), which `kubectl explain` reads."""
    paths: dict[str, Any] = {}
    components: dict[str, Any] = {}
    for resource, info in kinds:
        schema = (schemas or {}).get(resource)
        if schema is not None:
            gvk = {"group": group, "version": version, "kind": info.kind}
            reversed_group = ".".join(reversed(group.split("."))) if group else "io.k8s.api.core"
            components[f"{reversed_group}.{version}.{info.kind}"] = {
                **schema,
                "x-kubernetes-group-version-kind": [gvk],
            }
        scope = "/namespaces/{namespace}" if info.namespaced else ""
        path = f"/{group_version_path(group, version)}{scope}/{resource.plural}/{{name}}"
        paths[path] = {
            "patch": {
                "x-kubernetes-group-version-kind": {"group": group, "version": version, "kind": info.kind},
                "parameters": [{"name": "fieldValidation", "in": "query", "schema": {"type": "string"}}],
                "responses": {},
            }
        }
    return {
        "openapi": "3.0.0",
        "info": {"title": "smoothscale emulator", "version": version},
        "paths": paths,
        "components": {"schemas": components},
    }
