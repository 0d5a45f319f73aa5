"""The app's PodDisruptionBudget: sized from its standbys and replicas, kept current through scaling."""

from __future__ import annotations

import kubernetes
import pytest
from op_testkit import Kubectl, balanced, streamsapp, wait_for

from smoothscale.operator.disruption import max_unavailable, min_available
from smoothscale.resource import StreamsAppSpec
from smoothscale.sandbox.emulator.memoryruntime import MemoryRuntime


@pytest.mark.parametrize(
    ("replicas", "standbys", "unavailable", "available"),
    [(3, 1, 1, 2), (6, 2, 2, 4), (4, 0, 1, 3), (1, 1, 1, 0), (0, 1, 1, 0)],
)
def test_the_budget_lets_as_many_pods_go_as_there_are_standbys_and_at_least_one(
    replicas: int, standbys: int, unavailable: int, available: int
) -> None:
    spec = StreamsAppSpec.model_validate({**streamsapp(replicas=replicas, standbys=standbys)["spec"]})
    assert (max_unavailable(spec), min_available(spec)) == (unavailable, available)


def test_the_operator_keeps_a_budget_per_app_through_scaling(
    kube: Kubectl, fake: MemoryRuntime, run_operator
) -> None:
    policy = kubernetes.client.PolicyV1Api(kube.core.api_client)

    def min_available_now() -> int | None:
        try:
            budget = policy.read_namespaced_pod_disruption_budget("orders", "default")
        except kubernetes.client.ApiException as error:
            if error.status == 404:
                return None
            raise
        return int(budget.spec.min_available)

    with run_operator():
        kube.apply(streamsapp(replicas=3, partitions=6))
        wait_for(lambda: min_available_now() == 2, what="a budget of 2 available")
        budget = policy.read_namespaced_pod_disruption_budget("orders", "default")
        assert budget.spec.selector.match_labels == {"smoothscale.io/app": "orders"}
        assert budget.spec.unhealthy_pod_eviction_policy == "AlwaysAllow"
        assert budget.metadata.owner_references[0].kind == "StreamsApp"
        wait_for(lambda: balanced(kube.publication(), 3, 6), what="balance on 3")
        kube.patch_app("orders", {"spec": {"replicas": 5}})
        wait_for(lambda: min_available_now() == 4, what="the budget raised with replicas")
        kube.patch_app("orders", {"spec": {"replicas": 2, "assignment": {"numStandbys": 0}}})
        wait_for(lambda: min_available_now() == 1, what="the budget lowered")
        kube.custom.delete_namespaced_custom_object(
            "smoothscale.io", "v1alpha1", "default", "streamsapps", "orders"
        )
        wait_for(lambda: min_available_now() is None, what="the budget collected with the app")
