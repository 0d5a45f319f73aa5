"""State claims outlive a deleted StreamsApp unless its spec asks otherwise, and a new one mounts them."""

from __future__ import annotations

from typing import Any

from op_testkit import Kubectl, balanced, streamsapp, wait_for

from smoothscale.sandbox.emulator.memoryruntime import MemoryRuntime

CLAIMS = [f"orders-state-{ordinal}" for ordinal in range(3)]


def _claims(kube: Kubectl) -> dict[str, Any]:
    return {c.metadata.name: c for c in kube.core.list_namespaced_persistent_volume_claim("default").items}


def _delete_app(kube: Kubectl) -> None:
    kube.custom.delete_namespaced_custom_object(
        "smoothscale.io", "v1alpha1", "default", "streamsapps", "orders"
    )
    wait_for(lambda: not kube.pods() and kube.publication() is None, what="pods and ConfigMap collected")


def _start(kube: Kubectl) -> None:
    kube.apply(streamsapp(replicas=3, partitions=6, storage=True))
    wait_for(lambda: balanced(kube.publication(), 3, 6), what="balance on 3")


def test_a_deleted_app_leaves_its_claims_and_the_same_app_created_again_mounts_them(
    kube: Kubectl, fake: MemoryRuntime, run_operator
) -> None:
    with run_operator():
        _start(kube)
        before = {name: claim.metadata.uid for name, claim in _claims(kube).items()}
        assert sorted(before) == CLAIMS
        assert all(not claim.metadata.owner_references for claim in _claims(kube).values()), "Retain"
        _delete_app(kube)
        assert {name: claim.metadata.uid for name, claim in _claims(kube).items()} == before

        _start(kube)
        assert {name: claim.metadata.uid for name, claim in _claims(kube).items()} == before
        mounted = {
            pod.metadata.name: {
                v.persistent_volume_claim.claim_name for v in pod.spec.volumes if v.persistent_volume_claim
            }
            for pod in kube.pods().values()
        }
        assert mounted == {f"orders-{ordinal}": {f"orders-state-{ordinal}"} for ordinal in range(3)}


def test_claims_go_with_the_app_when_its_policy_says_delete_and_the_policy_is_applied_to_claims_made_before(
    kube: Kubectl, fake: MemoryRuntime, run_operator
) -> None:
    with run_operator():
        kube.apply(streamsapp(replicas=3, partitions=6, storage=True))
        wait_for(lambda: sorted(_claims(kube)) == CLAIMS, what="the claims")
        kube.patch_app("orders", {"spec": {"storage": {"retentionPolicy": {"whenDeleted": "Delete"}}}})
        uid = kube.app()["metadata"]["uid"]

        def owned() -> bool:
            claims = _claims(kube).values()
            return all([ref.uid for ref in c.metadata.owner_references or []] == [uid] for c in claims)

        wait_for(owned, what="every claim owned by the app")
        kube.patch_app("orders", {"spec": {"storage": {"retentionPolicy": {"whenDeleted": "Retain"}}}})
        wait_for(
            lambda: all(not c.metadata.owner_references for c in _claims(kube).values()), what="released"
        )
        kube.patch_app("orders", {"spec": {"storage": {"retentionPolicy": {"whenDeleted": "Delete"}}}})
        wait_for(owned, what="owned again")
        _delete_app(kube)
        wait_for(lambda: not _claims(kube), what="the claims collected with the app")


def test_a_scale_down_keeps_the_retired_pods_claims_by_default(
    kube: Kubectl, fake: MemoryRuntime, run_operator
) -> None:
    with run_operator():
        _start(kube)
        kube.patch_app("orders", {"spec": {"replicas": 2}})
        wait_for(lambda: set(kube.pods()) == {"orders-0", "orders-1"}, timeout=30, what="orders-2 retired")
        assert sorted(_claims(kube)) == CLAIMS
