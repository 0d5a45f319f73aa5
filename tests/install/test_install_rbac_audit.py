"""The chart's RBAC, enforced: the real operator runs a scale-out and a scale-in under exactly those grants.

test_install_rbac.py derives the permissions from the code and kopf's settings; this test checks that
derivation against what actually goes over the wire. The emulated API server answers 403, as a real one
would, to every request of the operator's ServiceAccount that the default chart's ClusterRole does not allow,
and records the permission each request used. The operator is told apart from the test's own clients (the
fake app pods, the test's kubectl) by the bearer token in its kubeconfig.

Passing means: nothing was denied (the chart grants enough for a full lifecycle: pods and claims created,
the assignment ConfigMap published and updated, pods marked leaving and retired with their claims, the
Kafka Secret read, other autoscalers looked for and replicas set through the scale subresource, the claims'
owners set and the disruption budget written), and
every granted permission was used (nothing is granted that the operator does not need), except the one the
API server checks at admission rather than per request (`streamsapps/finalizers` update, see
smoothscale.operator.access).
"""

from __future__ import annotations

import importlib.util
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType

import kmock
import kubernetes
import pytest
import yaml
from install_testkit import NOT_IN_A_LIFECYCLE, ROOT, Json, granted, one, render
from kopf.testing import KopfRunner

from smoothscale.operator.access import Access, UndeclaredAccessError, request_accesses
from smoothscale.operator.config import OperatorConfig
from smoothscale.operator.context import OperatorContext
from smoothscale.operator.main import build_registry
from smoothscale.sandbox.emulator import EmulatorThread, RunningEmulator, build_emulator
from smoothscale.sandbox.emulator.memoryruntime import memory_kubelet

TOKEN = "smoothscale-operator-service-account"


def _operator_testkit() -> ModuleType:
    """The operator suite's fake cluster (tests/operator/op_testkit.py): scheduled pods serving metrics.
    That suite imports it by the same name (its folder is on sys.path then): one module either way."""
    if "op_testkit" not in sys.modules:
        spec = importlib.util.spec_from_file_location(
            "op_testkit", ROOT / "tests" / "operator" / "op_testkit.py"
        )
        assert spec is not None and spec.loader is not None
        sys.modules["op_testkit"] = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(sys.modules["op_testkit"])
    return sys.modules["op_testkit"]


class Audit:
    """Decides, for each request of the operator, whether the grants allow it; remembers what was used."""

    def __init__(self, grants: set[Access]) -> None:
        self.grants = grants
        self.used: set[Access] = set()
        self.denied: list[str] = []
        self._lock = threading.Lock()

    def deny(self, request: kmock.Request) -> bool:
        if request.headers.get("Authorization") != f"Bearer {TOKEN}":
            return False  # not the operator
        params = {key: str(value) for key, value in request.params.items()}
        try:
            needed = set(request_accesses(str(request.method.value), request.url.path, params))
        except UndeclaredAccessError:
            return False  # discovery (/api, /apis, /version): every authenticated user may read it
        with self._lock:
            self.used |= needed
            missing = needed - self.grants
            if missing:
                self.denied.append(f"{request.method.value} {request.url} needs {sorted(map(str, missing))}")
        return bool(missing)


@pytest.fixture()
def audited(tmp_path: Path) -> Iterator[tuple[RunningEmulator, Audit]]:
    grants = granted(one(render(None), "ClusterRole"))
    audit = Audit(grants)
    emulator = build_emulator(bookmark_interval=0.5)
    emulator.faults.fail(403, times=None, when=audit.deny, message="forbidden by the chart's RBAC")
    with EmulatorThread(emulator) as served:
        yield served, audit


def _operator_kubeconfig(cluster: RunningEmulator, path: Path) -> Path:
    config = yaml.safe_load(cluster.kubeconfig.read_text())
    config["users"][0]["user"] = {"token": TOKEN}
    path.write_text(yaml.safe_dump(config))
    return path


def test_a_lifecycle_under_the_charts_grants_uses_them_all(
    audited: tuple[RunningEmulator, Audit], tmp_path: Path
) -> None:
    cluster, audit = audited
    testkit = _operator_testkit()
    config = OperatorConfig(
        kubeconfig=_operator_kubeconfig(cluster, tmp_path / "operator.kubeconfig"),
        metrics_port=None,
        journal_stdout=False,
        standalone=True,
        scrape_interval=0.2,
        scrape_timeout=0.5,
        debounce=0.05,
    )
    app: Json = testkit.streamsapp(replicas=3, partitions=6, storage=True)
    app["spec"]["storage"]["retentionPolicy"] = {"whenScaled": "Delete"}
    # Credentials for a Kafka nobody listens for: the Secret is read (get), Kafka fails, planning goes on.
    app["spec"]["kafka"] = {
        "bootstrapServers": "127.0.0.1:1",
        "securityProtocol": "SASL_PLAINTEXT",
        "saslMechanism": "PLAIN",
        "secretRef": {"name": "orders-kafka"},
        "timeout": "1s",
    }
    secret = {"metadata": {"name": "orders-kafka"}, "stringData": {"username": "u", "password": "p"}}
    with (
        kubernetes.config.new_client_from_config(config_file=str(cluster.kubeconfig)) as client,
        memory_kubelet(cluster, catch_up_lag=1000) as fake,
        KopfRunner(
            ["run", "-A", "--standalone"], registry=build_registry(OperatorContext(config)), timeout=60
        ),
    ):
        kube = testkit.Kubectl(client)
        kubernetes.client.CoreV1Api(client).create_namespaced_secret("default", secret)
        kube.apply(app)
        testkit.wait_for(lambda: testkit.balanced(kube.publication(), 3, 6), what="balance on 3")
        kube.patch_app("orders", {"spec": {"replicas": 2}})
        testkit.wait_for(lambda: set(kube.pods()) == {"orders-0", "orders-1"}, timeout=30, what="retired")
        testkit.wait_for(lambda: testkit.balanced(kube.publication(), 2, 6), what="balance on 2")
        claims = kubernetes.client.CoreV1Api(client).list_namespaced_persistent_volume_claim("default")
        assert sorted(c.metadata.name for c in claims.items) == ["orders-state-0", "orders-state-1"]
        # spec.autoscaling Act: no HPA nor ScaledObject targets the app (both listed), replicas set through
        # the scale subresource
        kube.patch_app("orders", {"spec": {"autoscaling": {"mode": "Act", "minReplicas": 3}}})
        testkit.wait_for(lambda: kube.app()["spec"]["replicas"] == 3, what="replicas set by the operator")
        policy = kubernetes.client.PolicyV1Api(client)
        testkit.wait_for(
            lambda: policy.read_namespaced_pod_disruption_budget("orders", "default").spec.min_available == 2,
            what="the disruption budget raised with the replicas (create, then patch)",
        )
        # the claims are the app's once it asks that they go with it (list and patch claims)
        kube.patch_app("orders", {"spec": {"storage": {"retentionPolicy": {"whenDeleted": "Delete"}}}})

        def owned() -> bool:
            listed = kubernetes.client.CoreV1Api(client).list_namespaced_persistent_volume_claim("default")
            return all(c.metadata.owner_references for c in listed.items)

        testkit.wait_for(owned, what="the claims owned by the app")
    assert fake.violations == []
    assert audit.denied == []
    assert not audit.grants - audit.used - NOT_IN_A_LIFECYCLE, audit.grants - audit.used
