"""Turn a pydantic model's JSON schema into a Kubernetes *structural* OpenAPI v3 schema.

pydantic writes JSON Schema 2020-12; a CRD takes a restricted OpenAPI 3.0 dialect ("structural schemas"):
no `$ref`, a `type` on every node, `anyOf` only where Kubernetes blesses it, numeric bounds in the 3.0
form, no `additionalProperties: false`, no `title`. Translating here keeps the models the single source of
truth; anything the translation does not understand is an error, never silently dropped, so a new kind of
field cannot produce a CRD that the API server rejects or that validates less than the models do.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pydantic import BaseModel

__all__ = ["UnsupportedSchemaError", "structural_schema"]

# JSON Schema keywords with no structural equivalent. Reaching one means a model needs a different shape.
_FORBIDDEN = frozenset(
    {"allOf", "oneOf", "not", "const", "uniqueItems", "propertyNames", "prefixItems", "patternProperties"}
)
_NULL = {"type": "null"}

# Order of keys in the output, for a CRD that reads top-down: what a node is, then its constraints, then
# its children, then Kubernetes' extensions. Keys not listed keep their order after the listed ones.
_KEY_ORDER = ("description", "type", "format", "enum", "default", "anyOf")
_TRAILING = ("required", "properties", "additionalProperties", "items")


class UnsupportedSchemaError(ValueError):
    """A model uses a construct a structural schema cannot express; the message gives the path."""


def structural_schema(model: type[BaseModel]) -> dict[str, Any]:
    """The structural schema of `model`, validating what the model validates, in camelCase."""
    raw = model.model_json_schema(by_alias=True, mode="validation")
    definitions = raw.pop("$defs", {})
    return _Translator(definitions).node(raw, model.__name__, ())


class _Translator:
    def __init__(self, definitions: Mapping[str, Any]) -> None:
        self._definitions = definitions

    def node(self, schema: Mapping[str, Any], path: str, resolving: tuple[str, ...]) -> dict[str, Any]:
        schema, resolving = self._resolve(schema, path, resolving)
        schema, resolving = self._resolve(_collapse_nullable(schema, path), path, resolving)
        forbidden = _FORBIDDEN & schema.keys()
        if forbidden:
            raise UnsupportedSchemaError(f"{path}: {sorted(forbidden)} cannot appear in a structural schema")
        out: dict[str, Any] = {}
        for key, value in schema.items():
            if key == "title" or (key == "default" and value is None):
                continue
            if key == "properties":
                out[key] = {name: self.node(sub, f"{path}.{name}", resolving) for name, sub in value.items()}
            elif key == "items":
                out[key] = self.node(value, f"{path}[]", resolving)
            elif key == "additionalProperties":
                self._additional(out, value, path, resolving)
            elif key in ("exclusiveMinimum", "exclusiveMaximum") and not isinstance(value, bool):
                # JSON Schema 2020-12 gives the bound itself; OpenAPI 3.0 a flag beside minimum/maximum.
                out["minimum" if key == "exclusiveMinimum" else "maximum"] = value
                out[key] = True
            else:
                out[key] = value
        _check_typed(out, path)
        return _ordered(out)

    def _resolve(
        self, schema: Mapping[str, Any], path: str, resolving: tuple[str, ...]
    ) -> tuple[Mapping[str, Any], tuple[str, ...]]:
        """Inline a `$ref`; the referring node's own keys (its description, its default) win."""
        while "$ref" in schema:
            name = schema["$ref"].rsplit("/", 1)[-1]
            if name in resolving:
                raise UnsupportedSchemaError(f"{path}: recursive model {name} cannot be inlined")
            siblings = {k: v for k, v in schema.items() if k != "$ref"}
            schema = {**self._definitions[name], **siblings}
            resolving = (*resolving, name)
        return schema, resolving

    def _additional(self, out: dict[str, Any], value: Any, path: str, resolving: tuple[str, ...]) -> None:
        if value is True:
            # Free-form content: Kubernetes would prune every field it has no schema for.
            out["x-kubernetes-preserve-unknown-fields"] = True
        elif isinstance(value, Mapping):
            if "properties" in out:
                raise UnsupportedSchemaError(f"{path}: properties and additionalProperties together")
            out["additionalProperties"] = self.node(value, f"{path}.*", resolving)
        # False needs no translation: the API server prunes unknown fields, and forbids this spelling of it.


def _collapse_nullable(schema: Mapping[str, Any], path: str) -> Mapping[str, Any]:
    """`X | None` becomes X: an optional field is simply absent (the API server prunes nulls)."""
    branches = schema.get("anyOf")
    if branches is None or schema.get("x-kubernetes-int-or-string"):
        return schema
    others = [b for b in branches if b != _NULL]
    if len(others) != 1 or len(others) == len(branches):
        raise UnsupportedSchemaError(
            f"{path}: unions other than `X | None` and int-or-string are not structural"
        )
    rest = {k: v for k, v in schema.items() if k != "anyOf"}
    return {**others[0], **rest}


def _check_typed(node: Mapping[str, Any], path: str) -> None:
    if "type" in node or node.get("x-kubernetes-preserve-unknown-fields"):
        return
    if node.get("x-kubernetes-int-or-string"):
        return
    raise UnsupportedSchemaError(f"{path}: every node of a structural schema needs a type")


def _ordered(node: dict[str, Any]) -> dict[str, Any]:
    def rank(key: str) -> tuple[int, int]:
        if key in _KEY_ORDER:
            return 0, _KEY_ORDER.index(key)
        if key in _TRAILING:
            return 2, _TRAILING.index(key)
        if key.startswith("x-kubernetes-"):
            return 3, 0
        return 1, 0

    return {key: node[key] for key in sorted(node, key=rank)}
