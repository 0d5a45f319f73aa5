"""Kubernetes' `$(NAME)` expansion of a container's environment, command and args, as the kubelet does it.

Pure, so that it is tested as data (against the cases of Kubernetes' own expansion tests) and held to a real
kubelet by the real-node lane. The rules (the kubelet's `makeEnvironmentVariables` and
`ExpandContainerCommandAndArgs`):

- `$(NAME)` in an env `value` expands from the variables defined *earlier* in the same container's list
  (their final values); a reference to a later or unknown variable stays as written, `$(NAME)`.
- `$$` is an escaped `$`; a `$` before anything else stays as it is (`$VAR`, `${VAR}`, `$?`); an
  unterminated `$(` stays as written; there is no nesting.
- A `valueFrom` value is never expanded; an empty `value` is the empty string.
- The variables of `envFrom` (ConfigMaps, Secrets, with their prefix) come before the whole `env` list, so
  any value may refer to them; theirs are never expanded.
- `command` and `args` expand from the container's final environment (every variable, in any order).
- When a name appears twice in the list, the later definition wins.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

_OPERATOR = "$"
_OPEN = "("
_CLOSE = ")"


def expand(text: str, lookup: Callable[[str], str | None]) -> str:
    """`text` with every `$(NAME)` that `lookup` knows replaced by its value, and `$$` by `$`."""
    out: list[str] = []
    cursor = 0
    end = len(text)
    while cursor < end:
        found = text.find(_OPERATOR, cursor)
        if found < 0 or found + 1 >= end:  # no operator left, or one at the very end: kept as it is
            out.append(text[cursor:])
            break
        out.append(text[cursor:found])
        following = text[found + 1]
        if following == _OPERATOR:  # `$$`: one literal `$`
            out.append(_OPERATOR)
            cursor = found + 2
        elif following == _OPEN:
            close = text.find(_CLOSE, found + 2)
            if close < 0:  # unterminated: `$(` kept, and the scan goes on after it
                out.append(_OPERATOR + _OPEN)
                cursor = found + 2
            else:
                name = text[found + 2 : close]
                value = lookup(name)
                out.append(f"$({name})" if value is None else value)
                cursor = close + 1
        else:  # a `$` that starts no reference: it and the next character stay
            out.append(_OPERATOR + following)
            cursor = found + 2
    return "".join(out)


ValueOf = Callable[[Mapping[str, Any]], str | None]
"""The value of a `valueFrom` variable (a `fieldRef`, say), or None when it cannot be resolved."""


def environment(
    variables: Sequence[Mapping[str, Any]], value_from: ValueOf, before: Mapping[str, str] | None = None
) -> dict[str, str]:
    """A container's environment from its `env` list, in order: each `value` expanded from the variables
    before it, each `valueFrom` resolved by `value_from` (a variable it cannot resolve is left out).
    `before`: the variables of the container's `envFrom`, which come first (never expanded themselves)."""
    env: dict[str, str] = dict(before or {})
    for variable in variables:
        name = variable.get("name")
        if not isinstance(name, str) or not name:
            continue
        value = variable.get("value")
        if value:
            env[name] = expand(str(value), env.get)
        elif variable.get("valueFrom") is not None:
            resolved = value_from(variable)
            if resolved is not None:
                env[name] = resolved
        else:
            env[name] = ""
    return env


def expand_words(words: Sequence[str], env: Mapping[str, str]) -> list[str]:
    """A container's `command` or `args`, each word expanded from its final environment `env`."""
    return [expand(str(word), env.get) for word in words]
