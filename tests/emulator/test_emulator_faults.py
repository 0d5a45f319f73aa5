"""Fault injection: the next N matching requests answer 409 or 500, or hang, and change nothing."""

from __future__ import annotations

import re
import time

import aiohttp
from emulator_testkit import MERGE, SAPPS, sapp

from smoothscale.sandbox.emulator import ExtendedEmulator


async def test_conflict_for_the_next_matching_requests_only(
    api: aiohttp.ClientSession, emulator: ExtendedEmulator
) -> None:
    await api.post(SAPPS, json=sapp("a"))
    fault = emulator.faults.conflict(times=2, method="PATCH", path=f"{SAPPS}/*")
    assert (await api.get(f"{SAPPS}/a")).status == 200  # not a PATCH: not taken
    for _ in range(2):
        resp = await api.patch(f"{SAPPS}/a", json={"spec": {"replicas": 5}}, headers=MERGE)
        assert resp.status == 409
        assert (await resp.json())["reason"] == "Conflict"
    assert (await (await api.get(f"{SAPPS}/a")).json())["spec"][
        "replicas"
    ] == 1  # the failed writes changed nothing
    assert (await api.patch(f"{SAPPS}/a", json={"spec": {"replicas": 5}}, headers=MERGE)).status == 200
    assert fault.hits == 2 and emulator.faults.armed == []


async def test_server_errors_with_a_regex_path_and_a_predicate(
    api: aiohttp.ClientSession, emulator: ExtendedEmulator
) -> None:
    emulator.faults.error(
        path=re.compile(r"/streamsapps$"), when=lambda request: request.data["metadata"]["name"] == "b"
    )
    assert (await api.post(SAPPS, json=sapp("a"))).status == 201
    failed = await api.post(SAPPS, json=sapp("b"))
    assert failed.status == 500
    assert (await failed.json())["reason"] == "InternalError"
    assert (await api.get(f"{SAPPS}/b")).status == 404
    assert (await api.post(SAPPS, json=sapp("b"))).status == 201


async def test_any_status_code_and_unlimited_faults(
    api: aiohttp.ClientSession, emulator: ExtendedEmulator
) -> None:
    emulator.faults.fail(503, times=None, method="GET")
    for _ in range(3):
        assert (await api.get(SAPPS)).status == 503
    emulator.faults.clear()
    assert (await api.get(SAPPS)).status == 200


async def test_hang_delays_then_serves(api: aiohttp.ClientSession, emulator: ExtendedEmulator) -> None:
    emulator.faults.hang(0.5, method="POST")
    started = time.monotonic()
    resp = await api.post(SAPPS, json=sapp("a"))
    assert resp.status == 201
    assert time.monotonic() - started >= 0.5
    started = time.monotonic()
    assert (await api.post(SAPPS, json=sapp("b"))).status == 201
    assert time.monotonic() - started < 0.5
