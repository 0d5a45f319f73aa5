"""Versioned publications (issue 34): every writer states the contract version, every reader follows the
fields it knows and ignores the rest, reads a publication without a version as version 1 (what ran before
versions existed), and refuses only a newer version, naming both and what to upgrade. What protects a task
(a well-formed generation and task lists, the generation key agreeing) stays as strict as before."""

from __future__ import annotations

import gzip
import json
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from smoothscale.contract.configmap import (
    CorruptAssignment,
    NewerAssignment,
    configmap_content,
    decode_publication,
    encode_publication,
    from_configmap,
)
from smoothscale.contract.publication import ClientAssignment, Publication, Revocation
from smoothscale.contract.version import CONTRACT_VERSION, UNVERSIONED

PUBLICATION = Publication(
    generation=7,
    assignment={
        "orders-0": ClientAssignment(active=["0_0", "0_1"], standby=["0_2"]),
        "orders-1": ClientAssignment(active=["0_2"], warmup=["0_0"]),
    },
    revoking={"0_3": Revocation(owner="orders-1", generation=7)},
)
KNOWN_NAMES = {"version", "generation", "assignment", "revoking", "active", "standby", "warmup", "owner"}
UNKNOWN_NAMES = st.text(min_size=1, max_size=8).filter(lambda name: name not in KNOWN_NAMES)
JSON_VALUES = st.recursive(
    st.one_of(st.none(), st.booleans(), st.integers(), st.text(max_size=6)),
    lambda children: st.one_of(
        st.lists(children, max_size=3), st.dictionaries(st.text(max_size=6), children, max_size=3)
    ),
    max_leaves=6,
)


def _wire(publication: Publication) -> dict[str, Any]:
    loaded: dict[str, Any] = json.loads(gzip.decompress(encode_publication(publication)))
    return loaded


def _decode(document: object) -> Publication:
    return decode_publication(gzip.compress(json.dumps(document).encode()))


def test_every_publication_written_states_the_contract_version() -> None:
    assert _wire(PUBLICATION)["version"] == CONTRACT_VERSION == 1
    content = configmap_content(PUBLICATION)
    assert from_configmap(content) == PUBLICATION


def test_a_publication_without_a_version_is_version_1_and_followed() -> None:
    document = _wire(PUBLICATION)
    del document["version"]
    decoded = _decode(document)
    assert decoded.version == UNVERSIONED == 1
    assert decoded == PUBLICATION


@given(
    top=st.dictionaries(UNKNOWN_NAMES, JSON_VALUES, min_size=1, max_size=3),
    roles=st.dictionaries(UNKNOWN_NAMES, JSON_VALUES, max_size=2),
    revocation=st.dictionaries(UNKNOWN_NAMES, JSON_VALUES, max_size=2),
)
def test_fields_a_reader_does_not_know_are_ignored_at_every_level(
    top: dict[str, Any], roles: dict[str, Any], revocation: dict[str, Any]
) -> None:
    """What a later operator adds (at the top, in a pod's roles, in a revocation) leaves the rest followed."""
    document = _wire(PUBLICATION)
    document.update(top)
    document["assignment"]["orders-0"].update(roles)
    document["revoking"]["0_3"].update(revocation)
    assert _decode(document) == PUBLICATION


@given(version=st.integers(min_value=CONTRACT_VERSION + 1, max_value=10**6))
def test_a_newer_version_is_refused_naming_both_versions_and_what_to_upgrade(version: int) -> None:
    document = _wire(PUBLICATION) | {"version": version}
    with pytest.raises(NewerAssignment) as refused:
        _decode(document)
    message = str(refused.value)
    assert f"contract version {version}" in message
    assert f"versions up to {CONTRACT_VERSION}" in message
    assert "upgrade the smoothscale client library or bridge" in message
    assert isinstance(refused.value, CorruptAssignment)  # every reader's corrupt-publication path applies


def test_a_newer_version_that_changed_a_field_is_refused_for_its_version_not_the_field() -> None:
    """A newer contract may change what a field is: the reader names the version, not a type error."""
    document = _wire(PUBLICATION) | {"version": CONTRACT_VERSION + 1, "generation": "7.a"}
    with pytest.raises(NewerAssignment, match=f"contract version {CONTRACT_VERSION + 1}"):
        _decode(document)


@pytest.mark.parametrize(
    "change",
    [
        {"version": 0},
        {"version": "one"},
        {"generation": -1},
        {"generation": "seven"},
        {"assignment": {"orders-0": {"active": "0_0"}}},
        {"assignment": {"orders-0": {"active": [""]}}},
        {"assignment": {"orders-0": {"active": [3]}}},
        {"revoking": {"0_3": {"owner": "orders-1", "generation": 0}}},
        {"revoking": {"0_3": {"generation": 7}}},
    ],
)
def test_what_protects_a_task_stays_strict(change: dict[str, Any]) -> None:
    with pytest.raises(CorruptAssignment) as refused:
        _decode(_wire(PUBLICATION) | change)
    assert not isinstance(refused.value, NewerAssignment)


def test_a_generation_key_that_disagrees_stays_corrupt_with_unknown_fields() -> None:
    content = configmap_content(PUBLICATION)
    content["data"]["generation"] = "8"
    with pytest.raises(CorruptAssignment, match="generation 7"):
        from_configmap(content)


def test_fields_built_in_python_stay_forbidden() -> None:
    """Tolerance is for the wire: code that builds a publication with a misspelt field still fails."""
    with pytest.raises(ValueError, match="generaton"):
        Publication.model_validate({"generation": 1, "generaton": 2})
