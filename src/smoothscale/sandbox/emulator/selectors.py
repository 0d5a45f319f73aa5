"""Label and field selectors of list and watch requests, with the API server's grammar and semantics.

kmock 0.8 ignores `labelSelector` and `fieldSelector`; the operator finds the pods of an app by labels, and
the `kubernetes` client watches a single object through `fieldSelector=metadata.name=...`: both must filter.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

_KEY = r"[A-Za-z0-9][-A-Za-z0-9_./]*"
_SET_TERM = re.compile(rf"^(?P<key>{_KEY})\s+(?P<op>in|notin)\s*\((?P<values>[^()]*)\)$")
_NOT_EXISTS_TERM = re.compile(rf"^!\s*(?P<key>{_KEY})$")
_COMPARE_TERM = re.compile(rf"^(?P<key>{_KEY})\s*(?P<op>==|=|!=|>|<)\s*(?P<value>[^\s,()!=<>]*)$")
_EXISTS_TERM = re.compile(rf"^(?P<key>{_KEY})$")


class SelectorError(ValueError):
    """A selector the API server would reject with 400 BadRequest."""


def _split_terms(text: str) -> list[str]:
    """Split on commas that are not inside the parentheses of a set (`a in (x,y),b`)."""
    terms: list[str] = []
    depth = 0
    current: list[str] = []
    for char in text:
        if char == "(":
            depth += 1
        elif char == ")":
            depth -= 1
        if char == "," and depth == 0:
            terms.append("".join(current).strip())
            current = []
        else:
            current.append(char)
    terms.append("".join(current).strip())
    if depth != 0:
        raise SelectorError(f"unbalanced parentheses in selector: {text!r}")
    return [term for term in terms if term]


@dataclass(frozen=True)
class LabelRequirement:
    """One term: `op` is one of `=`, `!=`, `in`, `notin`, `exists`, `!`, `>`, `<`."""

    key: str
    op: str
    values: tuple[str, ...] = ()

    def matches(self, labels: Mapping[str, str]) -> bool:
        present = self.key in labels
        value = labels.get(self.key)
        if self.op == "exists":
            return present
        if self.op == "!":
            return not present
        if self.op in ("=", "in"):
            return present and value in self.values
        if self.op in ("!=", "notin"):  # as in Kubernetes: objects without the label match too
            return not present or value not in self.values
        # `>` and `<` compare integers; a missing or non-integer label never matches.
        try:
            number, bound = int(value or ""), int(self.values[0])
        except ValueError:
            return False
        return number > bound if self.op == ">" else number < bound


@dataclass(frozen=True)
class LabelSelector:
    """A conjunction of requirements; the empty selector matches everything."""

    requirements: tuple[LabelRequirement, ...] = ()

    @classmethod
    def parse(cls, text: str | None) -> LabelSelector:
        requirements: list[LabelRequirement] = []
        for term in _split_terms(text or ""):
            if match := _SET_TERM.match(term):
                values = tuple(value.strip() for value in match["values"].split(",") if value.strip())
                requirements.append(LabelRequirement(match["key"], match["op"], values))
            elif match := _NOT_EXISTS_TERM.match(term):
                requirements.append(LabelRequirement(match["key"], "!"))
            elif match := _COMPARE_TERM.match(term):
                op = "=" if match["op"] == "==" else match["op"]
                if op in (">", "<") and not match["value"].lstrip("-").isdigit():
                    raise SelectorError(f"{op} needs an integer value in label selector term: {term!r}")
                requirements.append(LabelRequirement(match["key"], op, (match["value"],)))
            elif match := _EXISTS_TERM.match(term):
                requirements.append(LabelRequirement(match["key"], "exists"))
            else:
                raise SelectorError(f"unable to parse requirement: {term!r}")
        return cls(tuple(requirements))

    def matches(self, labels: Mapping[str, str] | None) -> bool:
        labels = labels or {}
        return all(requirement.matches(labels) for requirement in self.requirements)


def _field_value(obj: Mapping[str, Any], path: str) -> str:
    """The string form the API server compares: absent fields are '', booleans are JSON-style."""
    value: Any = obj
    for part in path.split("."):
        value = value.get(part) if isinstance(value, Mapping) else None
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


@dataclass(frozen=True)
class FieldSelector:
    """`metadata.name=x,metadata.namespace!=y`: equality terms on dotted paths of the object."""

    terms: tuple[tuple[str, bool, str], ...] = ()  # (path, equal?, value)

    @classmethod
    def parse(cls, text: str | None) -> FieldSelector:
        terms: list[tuple[str, bool, str]] = []
        for term in _split_terms(text or ""):
            match = re.match(r"^(?P<path>[A-Za-z0-9_.\-]+)\s*(?P<op>==|=|!=)\s*(?P<value>.*)$", term)
            if not match:
                raise SelectorError(f"invalid field selector term: {term!r}")
            terms.append((match["path"], match["op"] != "!=", match["value"].strip()))
        return cls(tuple(terms))

    def matches(self, obj: Mapping[str, Any]) -> bool:
        return all((_field_value(obj, path) == value) == equal for path, equal, value in self.terms)

    def required_value(self, path: str) -> str | None:
        """The value an equality term pins `path` to (lets a watch by `metadata.name` skip other objects)."""
        for term_path, equal, value in self.terms:
            if term_path == path and equal:
                return value
        return None


@dataclass(frozen=True)
class ObjectFilter:
    """Everything a list or watch request narrows by: namespace and name from the URL, plus both selectors."""

    namespace: str | None = None
    name: str | None = None
    labels: LabelSelector = LabelSelector()
    fields: FieldSelector = FieldSelector()

    @classmethod
    def from_query(cls, namespace: str | None, name: str | None, query: Mapping[str, str]) -> ObjectFilter:
        return cls(
            namespace=namespace,
            name=name,
            labels=LabelSelector.parse(query.get("labelSelector")),
            fields=FieldSelector.parse(query.get("fieldSelector")),
        )

    def matches(self, obj: Mapping[str, Any]) -> bool:
        metadata = obj.get("metadata") or {}
        if self.namespace is not None and metadata.get("namespace") != self.namespace:
            return False
        if self.name is not None and metadata.get("name") != self.name:
            return False
        return self.labels.matches(metadata.get("labels")) and self.fields.matches(obj)
