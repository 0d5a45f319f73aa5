"""A pod's claim is there before the pod: issue 40's chaos failure (seed 9, 40 events on a cold machine: two
pods held no task for minutes after the faults stopped, `{'orders-0': 0, 'orders-1': 6, 'orders-2': 6,
'orders-4': 0}`). A 409 to the claim's creation was taken for "the claim is there", the pod was created
without it, and the kubelet kept it Pending for good (a pod whose claim does not exist does not start): never
ready, it took part in no plan, while it counted toward `replicas`. A real API server answers 409 to the
creation of a claim whose previous one is still being deleted (a scale-in deleted it, its
`kubernetes.io/pvc-protection` finalizer holds it while its old pod runs), with the same outcome."""

from __future__ import annotations

import re

from op_testkit import Kubectl, balanced, streamsapp, wait_for

from smoothscale.sandbox.emulator import RunningEmulator
from smoothscale.sandbox.emulator.memoryruntime import MemoryRuntime

CLAIMS = re.compile(r"/persistentvolumeclaims$")


def test_a_claim_refused_with_409_is_created_before_its_pod(
    kube: Kubectl, fake: MemoryRuntime, cluster: RunningEmulator, run_operator
) -> None:
    cluster.emulator.faults.conflict(times=2, method="POST", path=CLAIMS)
    with run_operator():
        kube.apply(streamsapp(replicas=3, partitions=6, storage=True))
        wait_for(lambda: balanced(kube.publication(), 3, 6), timeout=30, what="balance on 3 pods")
        assert all(pod.status.phase == "Running" for pod in kube.pods().values())
