"""A StreamsApp deleted by mistake and created again: its claims stayed (`whenDeleted: Retain`, the default),
so every new worker finds its ordinal's state and restores only what was written since, none from zero."""

from __future__ import annotations

import json
import time

import pytest
from sandbox_e2e_kit import Run

from smoothscale.contract import shared_names as contract
from smoothscale.control import object_names
from smoothscale.sandbox import invariants
from smoothscale.sandbox.demo import APP, NAMESPACE, demo_app
from smoothscale.sandbox.harness import Sandbox

pytestmark = pytest.mark.slow


def test_a_streamsapp_deleted_and_created_again_finds_its_state_on_its_claims(sandbox: Sandbox) -> None:
    run = Run(sandbox)
    run.start(replicas=3)
    time.sleep(2)  # the stateful tasks' state grows past what a restore from zero would cost nothing
    sandbox.custom.delete_namespaced_custom_object(
        contract.GROUP, contract.VERSION, NAMESPACE, contract.PLURAL, APP
    )
    deadline = time.time() + 60
    while sandbox.pods(APP) or sandbox.publication(APP) is not None:
        assert time.time() < deadline, "the app's pods and ConfigMap were not collected"
        time.sleep(0.2)
    claims = {c.metadata.name for c in sandbox.core.list_namespaced_persistent_volume_claim(NAMESPACE).items}
    assert claims == {object_names.state_claim(APP, ordinal) for ordinal in range(3)}

    created = time.time()
    sandbox.apply(demo_app(replicas=3))
    last = run.settled("created again")
    records = sandbox.records()
    restarted = [r for r in records if r["kind"] == "started" and float(r["at"]) >= created]
    assert len(restarted) >= 3 and all(r["tasks"] for r in restarted), "a new worker found no state"
    restores = [r for r in records if r["kind"] == "restored" and float(r["at"]) >= created]
    run.violations += invariants.rebuilt_despite_volume(records)
    run.finish(last)
    restored = sum(r["toOffset"] - r["fromOffset"] for r in restores)
    from_zero = sum(r["toOffset"] for r in restores)
    print(
        json.dumps({"recreated_restored_records": restored, "restored_from_zero_would_be_records": from_zero})
    )
