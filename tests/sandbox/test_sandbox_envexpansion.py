"""The kubelet stand-in's `$(NAME)` expansion against the behaviour of Kubernetes' own expansion
(k8s.io/kubernetes third_party/forked/golang/expansion and the kubelet's makeEnvironmentVariables): the same
inputs, the same outputs. tests/realkube holds it to a real kubelet."""

from __future__ import annotations

import pytest

from smoothscale.sandbox.envexpansion import environment, expand, expand_words

KNOWN = {"VAR_A": "A", "VAR_B": "B", "VAR_C": "C", "VAR_REF": "$(VAR_A)", "VAR_EMPTY": ""}

CASES = [
    ("$(VAR_A)", "A"),
    ("$(VAR_A)-$(VAR_A)", "A-A"),
    ("$(VAR_A)-1", "A-1"),
    ("___$(VAR_B)___", "___B___"),
    ("___$(VAR_C)", "___C"),
    ("$(VAR_A)_$(VAR_B)_$(VAR_C)", "A_B_C"),
    ("$$(VAR_B)_$(VAR_A)", "$(VAR_B)_A"),
    ("$$(VAR_A)_$$(VAR_B)", "$(VAR_A)_$(VAR_B)"),
    ("f000-$$VAR_A", "f000-$VAR_A"),
    ("foo\\$(VAR_C)bar", "foo\\Cbar"),
    ("foo\\\\$(VAR_C)bar", "foo\\\\Cbar"),
    ("foo\\\\\\\\$(VAR_A)bar", "foo\\\\\\\\Abar"),
    ("$(VAR_A$(VAR_B))", "$(VAR_A$(VAR_B))"),
    ("$(VAR_A$(VAR_B)", "$(VAR_A$(VAR_B)"),
    ("$(VAR_REF)", "$(VAR_A)"),
    ("%%$(VAR_REF)--$(VAR_REF)%%", "%%$(VAR_A)--$(VAR_A)%%"),
    ("foo$(VAR_EMPTY)bar", "foobar"),
    ("foo$(VAR_Awhoops!", "foo$(VAR_Awhoops!"),
    ("f00__(VAR_A)__", "f00__(VAR_A)__"),
    ("$?_boo_$!", "$?_boo_$!"),
    ("$VAR_A", "$VAR_A"),
    ("$(VAR_DNE)", "$(VAR_DNE)"),
    ("$$$$$$(BIG_MONEY)", "$$$(BIG_MONEY)"),
    ("$$$$$$(VAR_A)", "$$$(VAR_A)"),
    ("$$$$$$$(GOOD_ODDS)", "$$$$(GOOD_ODDS)"),
    ("$$$$$$$(VAR_A)", "$$$A"),
    ("$VAR_A)", "$VAR_A)"),
    ("${VAR_A}", "${VAR_A}"),
    ("$(VAR_B)_______$(A", "B_______$(A"),
    ("$(VAR_C)_______$(", "C_______$("),
    ("$(VAR_A)foobarzab$", "Afoobarzab$"),
    ("foo-\\$(VAR_A", "foo-\\$(VAR_A"),
    ("--$($($($($--", "--$($($($($--"),
    ("$($($($($--foo$(", "$($($($($--foo$("),
    ("foo0--$($($($(", "foo0--$($($($("),
    ("$(foo$$var)", "$(foo$$var)"),
    ("\n", "\n"),
    ("", ""),
    ("$", "$"),
    ("$(", "$("),
    ("$()", "$()"),
]


@pytest.mark.parametrize(("text", "expected"), CASES)
def test_expand_follows_the_kubelet(text: str, expected: str) -> None:
    assert expand(text, KNOWN.get) == expected


def test_a_value_expands_from_earlier_variables_only() -> None:
    variables = [
        {"name": "LATER_REF", "value": "$(FOO)"},
        {"name": "FOO", "value": "bar"},
        {"name": "ZOO", "value": "$(FOO)-1"},
        {"name": "BLU", "value": "$(ZOO)-2"},
        {"name": "SELF", "value": "$(SELF)x"},
    ]
    env = environment(variables, lambda variable: None)
    assert env == {"LATER_REF": "$(FOO)", "FOO": "bar", "ZOO": "bar-1", "BLU": "bar-1-2", "SELF": "$(SELF)x"}


def test_value_from_is_never_expanded_and_a_later_definition_wins() -> None:
    variables = [
        {"name": "POD", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}},
        {"name": "ANNOTATED", "valueFrom": {"fieldRef": {"fieldPath": "metadata.annotations['x']"}}},
        {"name": "ID", "value": "$(POD)-$(ANNOTATED)"},
        {"name": "EMPTY", "value": ""},
        {"name": "ID", "value": "again-$(ID)"},
    ]
    resolved = {"metadata.name": "orders-0", "metadata.annotations['x']": "$(POD)"}

    def value_from(variable: object) -> str | None:
        return resolved.get(variable["valueFrom"]["fieldRef"]["fieldPath"])  # type: ignore[index]

    env = environment(variables, value_from)
    assert env == {"POD": "orders-0", "ANNOTATED": "$(POD)", "ID": "again-orders-0-$(POD)", "EMPTY": ""}


def test_command_and_args_expand_from_the_whole_environment() -> None:
    words = ["run", "$(LAST)", "--dir=$(DIR)", "$$(DIR)", "$(NOPE)"]
    expanded = ["run", "x", "--dir=/state", "$(DIR)", "$(NOPE)"]
    assert expand_words(words, {"DIR": "/state", "LAST": "x"}) == expanded
