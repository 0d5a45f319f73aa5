"""Fuzzed `StreamsApp` specs: each is rejected by the CRD's schema (the API server refuses it), or yields a
list of problems naming their fields (the operator's `InvalidSpec` condition), or is one the operator can
act on; never an exception. (That an invalid spec applied to a running app keeps its last good assignment is
`tests/operator/test_op_faults.py`.)"""

from __future__ import annotations

import copy
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import jsonschema
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from smoothscale.control.snapshot import build_tasks
from smoothscale.operator.appref import AppRef
from smoothscale.operator.podset import build_pod
from smoothscale.resource import load_spec, planner_config, spec_problems, template_revision

ROOT = Path(__file__).resolve().parents[2]
CRD = yaml.safe_load((ROOT / "crds" / "streamsapp.yaml").read_text())
SPEC_SCHEMA = CRD["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]
EXAMPLE_SPEC = yaml.safe_load((ROOT / "examples" / "streamsapp.yaml").read_text())["spec"]
# OpenAPI 3.0 as Kubernetes uses it is draft 4 (boolean exclusiveMinimum included).
VALIDATOR = jsonschema.Draft4Validator(SPEC_SCHEMA)

JSON_VALUES = st.recursive(
    st.one_of(
        st.none(),
        st.booleans(),
        st.integers(-(2**40), 2**40),
        st.floats(allow_nan=False),
        st.sampled_from(["", "0", "1m", "0s", "-5", "50%", "0%", "10x", "Swap", "RollingRestart", "none"]),
        st.text(max_size=10),
    ),
    lambda children: st.one_of(
        st.lists(children, max_size=3), st.dictionaries(st.text(max_size=8), children, max_size=3)
    ),
    max_leaves=6,
)


def _containers(node: Any) -> Iterator[Any]:
    """Every map and list of the spec, its root included: the places a mutation may change."""
    if isinstance(node, dict | list):
        yield node
    items = node.values() if isinstance(node, dict) else node if isinstance(node, list) else ()
    for value in items:
        yield from _containers(value)


@st.composite
def fuzzed_specs(draw: st.DrawFn) -> dict[str, Any]:
    """The shipped example with 1..4 random edits: a value replaced, a key removed or one added."""
    spec = copy.deepcopy(EXAMPLE_SPEC)
    for _ in range(draw(st.integers(1, 4))):
        container = draw(st.sampled_from(list(_containers(spec))))
        edit = draw(st.sampled_from(["replace", "remove", "add"]))
        if isinstance(container, dict) and container and edit != "add":
            key = draw(st.sampled_from(sorted(container)))
            if edit == "remove":
                del container[key]
            else:
                container[key] = draw(JSON_VALUES)
        elif isinstance(container, dict):
            container[draw(st.sampled_from(["replicas", "weight", "racks", "x", "partitions"]))] = draw(
                JSON_VALUES
            )
        elif isinstance(container, list) and container:
            container[draw(st.integers(0, len(container) - 1))] = draw(JSON_VALUES)
    return spec


@given(fuzzed_specs())
@settings(max_examples=300, deadline=None)
def test_a_spec_is_refused_by_the_schema_or_named_problems_or_acted_on(spec: dict[str, Any]) -> None:
    refused_by_schema = next(VALIDATOR.iter_errors(spec), None) is not None
    problems = spec_problems(spec)
    assert all(isinstance(p, str) and p.startswith("spec") for p in problems), problems
    if refused_by_schema or problems:
        return
    # Acceptable: everything the operator derives from a spec works on it.
    loaded = load_spec(spec)
    app = AppRef("streams", "orders", "uid-1")
    build_pod(app, loaded, 0, template_revision(loaded))
    planner_config(loaded)
    build_tasks(loaded, {}, {})


def test_the_example_itself_is_acceptable() -> None:
    """The fuzzing starts from a spec that passes both checks, so each edit is what breaks it."""
    assert next(VALIDATOR.iter_errors(EXAMPLE_SPEC), None) is None
    assert spec_problems(EXAMPLE_SPEC) == []
