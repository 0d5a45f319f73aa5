"""Regression (found by tests/fuzz/test_fuzz_assignment.py): an assignment whose gzip header is intact but
whose deflate stream is corrupt raised `zlib.error` out of `decode_publication`, which neither the client
library nor the operator expected (both now read through the contract's one codec, which raises
`CorruptAssignment`): the pod logged a bare follower error at every poll instead of "ignores a corrupt
assignment; current work continues", and the operator's read of its own ConfigMap failed outright."""

from __future__ import annotations

import base64

import pytest

from smoothscale.contract.configmap import (
    CorruptAssignment,
    decode_publication,
    encode_publication,
    from_configmap,
)
from smoothscale.contract.publication import Publication


def _corrupt_stream() -> bytes:
    valid = encode_publication(Publication(generation=3))
    # Byte 10 starts the deflate stream right after gzip's 10-byte header: 0xff is an invalid block type.
    return valid[:10] + b"\xff" + valid[11:]


def _configmap(raw: bytes) -> dict[str, object]:
    return {"data": {"generation": "3"}, "binaryData": {"assignment.json.gz": base64.b64encode(raw).decode()}}


def test_a_corrupt_deflate_stream_is_an_undecodable_publication() -> None:
    with pytest.raises(CorruptAssignment, match="not gzip data"):
        decode_publication(_corrupt_stream())


def test_the_configmap_codec_calls_it_corrupt() -> None:
    with pytest.raises(CorruptAssignment):
        from_configmap(_configmap(_corrupt_stream()))
