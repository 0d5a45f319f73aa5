"""The Java bridge watches its assignment ConfigMap on a real kube-apiserver, as a pod's ServiceAccount bound
to the minimal Role the README gives (get, list, watch on that one ConfigMap by resourceNames).

The sample app runs as a real JVM with the ServiceAccount's token; no broker is needed to see what it read:
`smoothscale_bridge_publication_read_generation` reports the newest generation it has read.
"""

from __future__ import annotations

import time
from pathlib import Path

import kubernetes
from realkube_kit import Cluster, wait_for

from smoothscale.contract.publication import ClientAssignment, Publication
from smoothscale.sandbox.kafka_streams import SampleApp

APP = "orders"


def minimal_role(cluster: Cluster) -> None:
    rbac = kubernetes.client.RbacAuthorizationV1Api(cluster.api)
    cluster.core.create_namespaced_service_account(cluster.namespace, {"metadata": {"name": APP}})
    rbac.create_namespaced_role(
        cluster.namespace,
        {
            "metadata": {"name": f"{APP}-assignment-reader"},
            "rules": [
                {
                    "apiGroups": [""],
                    "resources": ["configmaps"],
                    "resourceNames": [f"{APP}-assignment"],
                    "verbs": ["get", "list", "watch"],
                }
            ],
        },
    )
    rbac.create_namespaced_role_binding(
        cluster.namespace,
        {
            "metadata": {"name": f"{APP}-assignment-reader"},
            "roleRef": {
                "apiGroup": "rbac.authorization.k8s.io",
                "kind": "Role",
                "name": f"{APP}-assignment-reader",
            },
            "subjects": [{"kind": "ServiceAccount", "name": APP, "namespace": cluster.namespace}],
        },
    )


def test_the_bridge_reads_each_generation_within_a_second_with_only_the_minimal_role(
    cluster: Cluster, workdir: Path
) -> None:
    minimal_role(cluster)
    token = cluster.control_plane.service_account_kubeconfig(
        cluster.namespace, APP, workdir / "pod.kubeconfig"
    )
    denied = cluster.kubectl("auth", "can-i", "get", "configmaps/other", f"--kubeconfig={token}", check=False)
    assert denied.stdout.strip() == "no", "the Role must grant nothing beyond the assignment ConfigMap"

    app = SampleApp(
        APP, cluster.namespace, "127.0.0.1:1", token, workdir
    )  # no broker: only the watch matters
    plan = {"orders-0": ClientAssignment(active=["0_0", "1_0"])}
    try:
        app.publish(cluster.core, Publication(generation=1, assignment=plan))
        instance = app.start("orders-0")
        read = "smoothscale_bridge_publication_read_generation"
        wait_for(lambda: instance.metrics().get(read) == 1, timeout=90, what="generation 1 read")
        delays = []
        for generation in (2, 3, 4):
            written = app.publish(cluster.core, Publication(generation=generation, assignment=plan))
            wait_for(
                lambda g=generation: instance.metrics().get(read) == g,
                timeout=10,
                what=f"generation {generation}",
            )
            delays.append(time.monotonic() - written)
        print(f"generations read {', '.join(f'{d:.2f}' for d in delays)} s after they were written")
        assert max(delays) < 1.0, "each instance must see a new generation within a second"
    finally:
        app.stop_all()
