"""PATCH bodies: JSON patch (RFC 6902), JSON merge patch (RFC 7386), and what stands in for the others.

kmock merges dicts but refuses to replace a dict by a scalar (and vice versa), which RFC 7386 allows; and kopf
removes finalizers with a JSON patch whose first op tests `metadata.resourceVersion`, so a failed `test` op
must answer 422 exactly as kube-apiserver does. Strategic-merge patches are applied as merge patches (list
merging by keys is not emulated), and server-side apply as a merge patch of the applied document.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Mapping
from typing import Any

import jsonpatch
import yaml

JSON_PATCH = "application/json-patch+json"
MERGE_PATCH = "application/merge-patch+json"
STRATEGIC_MERGE_PATCH = "application/strategic-merge-patch+json"
APPLY_PATCH = "application/apply-patch+yaml"
SUPPORTED = (JSON_PATCH, MERGE_PATCH, STRATEGIC_MERGE_PATCH, APPLY_PATCH)


class PatchError(ValueError):
    """The patch does not apply (a failed `test`, a missing path, a malformed body): 422 for the client."""


class UnsupportedPatchType(ValueError):
    """The content type is not a patch type the API server knows: 415 for the client."""


def merge_patch(target: Any, patch: Any) -> Any:
    """RFC 7386: dicts merge recursively, `null` deletes a key, anything else (lists too) replaces."""
    if not isinstance(patch, Mapping):
        return copy.deepcopy(patch)
    result: dict[str, Any] = dict(target) if isinstance(target, Mapping) else {}
    for key, value in patch.items():
        if value is None:
            result.pop(key, None)
        else:
            result[key] = merge_patch(result.get(key), value)
    return result


def content_type_of(headers: Mapping[str, str]) -> str:
    """The media type without parameters (`; charset=utf-8`), lower-cased."""
    raw = next((value for key, value in headers.items() if key.lower() == "content-type"), "")
    return raw.split(";", 1)[0].strip().lower()


def parse_body(content_type: str, body: bytes) -> Any:
    """Decode the patch document: JSON for all types, YAML (a superset of JSON) for server-side apply."""
    if content_type not in SUPPORTED:
        raise UnsupportedPatchType(content_type)
    try:
        return yaml.safe_load(body) if content_type == APPLY_PATCH else json.loads(body or b"null")
    except (ValueError, yaml.YAMLError) as exc:
        raise PatchError(f"the patch body is not valid: {exc}") from exc


def apply_patch(obj: Mapping[str, Any], content_type: str, patch: Any) -> dict[str, Any]:
    """The patched copy of `obj`; the original is never mutated (stored versions are shared)."""
    if content_type == JSON_PATCH:
        if not isinstance(patch, list):
            raise PatchError("a JSON patch must be a list of operations")
        try:
            result = jsonpatch.apply_patch(copy.deepcopy(dict(obj)), patch, in_place=True)
        except jsonpatch.JsonPatchTestFailed as exc:
            raise PatchError(
                f"the server rejected our request due to an error in our request: {exc}"
            ) from exc
        except (jsonpatch.JsonPatchException, jsonpatch.JsonPointerException, KeyError, TypeError) as exc:
            raise PatchError(f"the patch could not be applied: {exc}") from exc
    else:
        if not isinstance(patch, Mapping):
            raise PatchError("a merge patch must be a JSON object")
        result = merge_patch(obj, patch)
    if not isinstance(result, dict):
        raise PatchError("the patch must leave an object")
    return result
