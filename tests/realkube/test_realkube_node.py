"""A real node: containerd 2.x with runc and the CNI bridge, and a kubelet registered with the control plane
under a zone label, with kube-scheduler binding pods to it (docs/real-node.md). On it: a pod of the locally
built operator image (`imagePullPolicy: Never`) until the kubelet's own readiness probe passes; the operator
installed with `helm install` of the chart, running as a pod with its ServiceAccount's in-cluster credentials;
and a StreamsApp of the sample worker whose pods it creates, scaled, crashed and deleted with a grace period.
Nothing is left running when the node stops.

The node's binaries are built on first use (`bash tools/node/build.sh`, about 19 minutes cold, which
`.ci/run` runs first) and cached: the script returns at once on a warm machine. Only without root (runc and
the CNI bridge need it) is the test skipped.
"""

from __future__ import annotations

import contextlib
import ipaddress
import json
import os
import shutil
import subprocess
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import kubernetes
import pytest
from realkube_kit import ROOT, built_binaries, sibling_kit, wait_for

from smoothscale.contract import names as contract
from smoothscale.sandbox.app_view import AppReader
from smoothscale.sandbox.control_plane import CONTROLLERS, Binaries, ControlPlane, RunningControlPlane
from smoothscale.sandbox.demo import demo_app, worker_env
from smoothscale.sandbox.environment import CHANGELOG_EPOCH_ENV, STATE_DIR_ENV
from smoothscale.sandbox.observe import settle
from smoothscale.sandbox.real_node import ZONE_LABEL, NodeBinaries, RealNode, RunningNode

pytestmark = pytest.mark.slow
install = sibling_kit("install", "install_testkit")

Json = dict[str, Any]
NODE_BUILD = ROOT / "tools" / "node" / "build.sh"
NODE_IMAGES = ROOT / "tools" / "node" / "images.sh"
SUBNET = "10.244.27.0/24"
NODE_CONTROLLERS = (
    *CONTROLLERS,
    # Pods mount their ServiceAccount's token with the cluster's CA, which this controller publishes.
    "root-ca-certificate-publisher-controller",
    # Lifts the not-ready taint a kubelet registers its node with, once the node is Ready.
    "node-lifecycle-controller",
    # The chart's Deployment.
    "deployment-controller",
    "replicaset-controller",
)


def _run(script: Path) -> list[str]:
    done = subprocess.run(["bash", str(script)], capture_output=True, text=True, check=False, timeout=3600)
    if done.returncode != 0:
        raise RuntimeError(f"{script} failed ({done.returncode}):\n{done.stderr[-4000:]}")
    return done.stdout.strip().splitlines()


def _node_binaries() -> NodeBinaries:
    if os.geteuid() != 0:
        pytest.skip("a real node needs root (runc, network namespaces, the CNI bridge)")
    # Built on first use and cached (~19 minutes cold), as the control plane's binaries are: never skipped.
    return NodeBinaries.from_folder(_run(NODE_BUILD)[-1])


STEP_SECONDS: dict[str, float] = {}
"""How long each step of the module's real-node run took; printed as one JSON line when the node stops."""


@contextlib.contextmanager
def _timed(step: str) -> Iterator[None]:
    started = time.monotonic()
    try:
        yield
    finally:
        STEP_SECONDS[step] = round(time.monotonic() - started, 1)


@pytest.fixture(scope="module")
def node_cluster(
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[tuple[RunningControlPlane, RunningNode, str]]:
    binaries = _node_binaries()
    with _timed("images (tools/node/images.sh)"):
        image, sandbox_image, archive = _run(NODE_IMAGES)[-3:]
    root = tmp_path_factory.mktemp("node-control-plane")
    node_root = Path(tempfile.mkdtemp(prefix="ssnode-"))  # short: containerd's socket lives there
    try:
        yield from _started(root, node_root, binaries, image, sandbox_image, Path(archive))
    finally:
        shutil.rmtree(node_root, ignore_errors=True)  # containerd's unpacked images: hundreds of MB
        print(json.dumps({"real_node_step_seconds": STEP_SECONDS}))


def _started(
    root: Path, node_root: Path, binaries: NodeBinaries, image: str, sandbox_image: str, archive: Path
) -> Iterator[tuple[RunningControlPlane, RunningNode, str]]:
    with contextlib.ExitStack() as stack:
        control_plane = ControlPlane(
            root,
            Binaries.from_folder(built_binaries()),
            controllers=NODE_CONTROLLERS,
            scheduler=binaries.folder / "kube-scheduler",
        )
        with _timed("control plane start (with kube-scheduler)"):
            cp = control_plane.start()
        stack.callback(_timed_call, "control plane stop", control_plane.stop)
        node = RealNode(
            node_root,
            binaries,
            cp,
            name="real-zone-a",
            zone="zone-a",
            images=archive,
            sandbox_image=sandbox_image,
            pod_subnet=SUBNET,
        )
        with _timed("node start (containerd, images imported, kubelet Ready)"):
            running = node.start()
        stack.callback(_timed_call, "node stop (its pods deleted, kubelet, containerd)", node.stop)
        yield cp, running, image
    pgrep = subprocess.run(["pgrep", "-f", str(node_root)], capture_output=True, text=True, check=False)
    leftovers = pgrep.stdout.split()
    assert not leftovers, f"processes of the node still running after it stopped: {leftovers}"


def _timed_call(step: str, call: Callable[[], None]) -> None:
    with _timed(step):
        call()


def test_a_pod_of_the_built_image_turns_ready_on_the_real_node(
    node_cluster: tuple[RunningControlPlane, RunningNode, str],
) -> None:
    cp, node, image = node_cluster
    pod = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "hello", "namespace": "default"},
        "spec": {
            "containers": [
                {
                    "name": "hello",
                    "image": image,
                    "imagePullPolicy": "Never",
                    "command": ["python", "-m", "http.server", "8080", "--directory", "/opt/smoothscale"],
                    "readinessProbe": {"httpGet": {"path": "/", "port": 8080}, "periodSeconds": 1},
                    "securityContext": {"runAsNonRoot": True, "allowPrivilegeEscalation": False},
                }
            ],
        },
    }
    with kubernetes.config.new_client_from_config(config_file=str(cp.kubeconfig)) as api:
        core = kubernetes.client.CoreV1Api(api)
        labels = core.read_node(node.name).metadata.labels
        assert labels[ZONE_LABEL] == "zone-a"
        core.create_namespaced_pod("default", pod)

        def ready() -> kubernetes.client.V1Pod | None:
            found = core.read_namespaced_pod("hello", "default")
            conditions = found.status.conditions or []
            return found if any(c.type == "Ready" and c.status == "True" for c in conditions) else None

        running = wait_for(ready, timeout=180, what="the pod Ready (the kubelet's httpGet probe passing)")
    assert running.spec.node_name == node.name, "kube-scheduler bound it to the real node"
    assert ipaddress.ip_address(running.status.pod_ip) in ipaddress.ip_network(SUBNET)
    status = running.status.container_statuses[0]
    assert status.ready and status.restart_count == 0 and status.state.running is not None
    assert status.image_id, "the kubelet reports the image the container runs"
    assert len(node.tasks()) == 2, "containerd runs the pod's sandbox and its container"


# -- the operator, installed with the chart ------------------------------------------------------------------

RELEASE_NAMESPACE = "smoothscale-system"
OPERATOR_ACCOUNT = f"system:serviceaccount:{RELEASE_NAMESPACE}:smoothscale"


@pytest.fixture(scope="module")
def operator_release(
    node_cluster: tuple[RunningControlPlane, RunningNode, str],
) -> Iterator[kubernetes.client.V1Pod]:
    """`helm install` of the chart with its default values (the image is the one imported into the node;
    pull policy IfNotPresent), waited on until the Deployment is available; uninstalled afterwards."""
    cp, _, _ = node_cluster
    helm = ("--kubeconfig", str(cp.kubeconfig), "--namespace", RELEASE_NAMESPACE)
    started = time.monotonic()
    install.helm("install", "smoothscale", str(install.CHART), *helm, "--create-namespace")
    try:
        with kubernetes.config.new_client_from_config(config_file=str(cp.kubeconfig)) as api:
            apps, core = kubernetes.client.AppsV1Api(api), kubernetes.client.CoreV1Api(api)

            def available() -> kubernetes.client.V1Pod | None:
                deployment = apps.read_namespaced_deployment("smoothscale", RELEASE_NAMESPACE)
                if not deployment.status.available_replicas:
                    return None
                (pod,) = core.list_namespaced_pod(RELEASE_NAMESPACE).items
                return pod

            pod = wait_for(available, timeout=180, what="the chart's Deployment available (its pod Ready)")
            STEP_SECONDS["helm install: operator Ready"] = round(time.monotonic() - started, 1)
            yield pod
    finally:
        with _timed("helm uninstall --wait"):
            install.helm("uninstall", "smoothscale", *helm, "--wait", "--timeout=50s", check=False)


def test_the_chart_installs_the_operator_as_a_pod_with_its_own_credentials(
    node_cluster: tuple[RunningControlPlane, RunningNode, str],
    operator_release: kubernetes.client.V1Pod,
) -> None:
    cp, node, _ = node_cluster
    pod = operator_release
    assert pod.spec.node_name == node.name
    (status,) = pod.status.container_statuses
    assert status.ready and status.restart_count == 0
    # What the runtime was told to run: the chart's securityContext, as containerd holds it.
    container_id = status.container_id.removeprefix("containerd://")
    spec = json.loads(node.ctr("containers", "info", container_id))["Spec"]
    assert spec["root"]["readonly"] is True, "readOnlyRootFilesystem"
    assert spec["process"]["user"]["uid"] == 10001, "the image's non-root user"
    assert not spec["process"].get("capabilities", {}).get("effective"), "every capability dropped"
    # The operator reached the API server through the `kubernetes` Service as its ServiceAccount: the
    # audit log holds its watches of StreamsApps, answered.
    wait_for(
        lambda: _watched_by(cp.audit_log, OPERATOR_ACCOUNT, "streamsapps"),
        timeout=60,
        what=f"a watch of StreamsApps by {OPERATOR_ACCOUNT} in the audit log",
    )


def _watched_by(audit_log: Path, user: str, resource: str) -> bool:
    if not audit_log.exists():
        return False
    for line in audit_log.read_text().splitlines():
        event = json.loads(line)
        if (
            event.get("user", {}).get("username") == user
            and event.get("verb") == "watch"
            and event.get("objectRef", {}).get("resource") == resource
            and event.get("responseStatus", {}).get("code") == 200
        ):
            return True
    return False


# -- a StreamsApp of the sample worker, its pods run by the real kubelet -------------------------------------

APP_NAMESPACE = "streams"
APP = "orders"
WORKER_ACCESS: list[dict[str, object]] = [
    # The sample worker follows its assignment ConfigMap and its own pod (leaving), as the client does.
    {"apiGroups": [""], "resources": ["configmaps"], "resourceNames": [f"{APP}-assignment"],
     "verbs": ["get", "list", "watch"]},
    {"apiGroups": [""], "resources": ["pods"], "verbs": ["get", "list", "watch"]},
]  # fmt: skip


def _worker_app(image: str, replicas: int) -> dict[str, object]:
    """The demo's app (`demo.demo_app`), its pods the sample worker from the operator's image, reading its
    assignment with its ServiceAccount, its state in the pod's emptyDir, ready once it serves metrics."""
    app = demo_app(replicas, image)
    app["metadata"]["namespace"] = APP_NAMESPACE
    del app["spec"]["storage"]  # no volume provisioner runs: the operator gives each pod an emptyDir
    variables = {**worker_env(1.0), STATE_DIR_ENV: "/state", CHANGELOG_EPOCH_ENV: repr(time.time())}
    app["spec"]["template"]["spec"] = {
        "serviceAccountName": APP,
        "terminationGracePeriodSeconds": 10,
        "containers": [
            {
                "name": "app",
                "image": image,
                "imagePullPolicy": "Never",
                "command": ["smoothscale", "worker"],
                "env": [{"name": name, "value": value} for name, value in variables.items()],
                "ports": [{"name": "metrics", "containerPort": 8080}],
                "readinessProbe": {"httpGet": {"path": "/metrics", "port": "metrics"}, "periodSeconds": 1},
                "volumeMounts": [{"name": "state", "mountPath": "/state"}],
            }
        ],
    }
    return app


def test_a_streams_app_runs_scales_and_recovers_on_the_real_node(
    node_cluster: tuple[RunningControlPlane, RunningNode, str],
    operator_release: kubernetes.client.V1Pod,
) -> None:
    cp, node, image = node_cluster
    with kubernetes.config.new_client_from_config(config_file=str(cp.kubeconfig)) as api:
        core = kubernetes.client.CoreV1Api(api)
        rbac = kubernetes.client.RbacAuthorizationV1Api(api)
        core.create_namespace({"metadata": {"name": APP_NAMESPACE}})
        core.create_namespaced_service_account(APP_NAMESPACE, {"metadata": {"name": APP}})
        rbac.create_namespaced_role(APP_NAMESPACE, {"metadata": {"name": APP}, "rules": WORKER_ACCESS})
        binding = {
            "metadata": {"name": APP},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": APP},
            "subjects": [{"kind": "ServiceAccount", "name": APP, "namespace": APP_NAMESPACE}],
        }
        rbac.create_namespaced_role_binding(APP_NAMESPACE, binding)
        reader = AppReader(api, APP_NAMESPACE)
        custom = kubernetes.client.CustomObjectsApi(api)
        custom.create_namespaced_custom_object(
            contract.GROUP, contract.VERSION, APP_NAMESPACE, contract.PLURAL, _worker_app(image, 3)
        )
        timings = {"start 3": _settled(reader, 3)}
        for replicas in (6, 3):
            scale = {"spec": {"replicas": replicas}}
            custom.patch_namespaced_custom_object(
                contract.GROUP, contract.VERSION, APP_NAMESPACE, contract.PLURAL, APP, scale
            )
            timings[f"scale to {replicas}"] = _settled(reader, replicas)

        # The runtime kills a container's process: the kubelet restarts it in the same pod.
        victim = reader.pods(APP)[0]
        (status,) = victim["status"]["containerStatuses"]
        node.ctr("tasks", "kill", "--signal=SIGKILL", status["containerID"].removeprefix("containerd://"))
        timings["container killed"] = _settled(
            reader, 3, also=lambda pods: _restarts(pods).get(victim["metadata"]["name"]) == 1
        )
        (restarted,) = [p for p in reader.pods(APP) if p["metadata"]["name"] == victim["metadata"]["name"]]
        (status,) = restarted["status"]["containerStatuses"]
        assert restarted["metadata"]["uid"] == victim["metadata"]["uid"], "restarted in place, not replaced"
        assert status["lastState"]["terminated"]["exitCode"] == 137, status["lastState"]

        # A pod deleted with a grace period: SIGTERM, the worker stops in time, the operator replaces it.
        gone = reader.pods(APP)[1]["metadata"]
        started = time.monotonic()
        core.delete_namespaced_pod(gone["name"], APP_NAMESPACE, grace_period_seconds=10)
        wait_for(
            lambda: gone["uid"] not in {p["metadata"]["uid"] for p in reader.pods(APP)},
            timeout=30,
            what=f"{gone['name']} terminated by the kubelet",
        )
        stopped_in = time.monotonic() - started
        assert stopped_in < 10, (
            f"the worker stopped on SIGTERM, not at the grace period's end ({stopped_in:.1f} s)"
        )
        timings["pod deleted"] = _settled(reader, 3)
    STEP_SECONDS.update({f"app settled: {step}": seconds for step, seconds in timings.items()})


def _settled(reader: AppReader, replicas: int, also: Callable[[list[Json]], bool] = lambda _: True) -> float:
    """Seconds until the app settled on `replicas` pods (`observe.settle`: every pod Ready, on the published
    generation, every task processing where the plan puts it), balanced, with the operator's status agreeing
    with what the kubelet reports of the pods."""
    started = time.monotonic()
    snapshot = settle(
        reader,
        APP,
        f"{replicas} replicas",
        timeout=120,
        also=lambda s: also(reader.pods(APP)) and s.replicas == replicas,
    )
    assert snapshot is not None, f"not settled on {replicas} pods within 120 s"
    actives = [pod.active for pod in snapshot.pods]
    assert max(actives) - min(actives) <= 1, f"unbalanced: {actives}"
    pods = reader.pods(APP)
    status = reader.app(APP)["status"]
    kubelet_ready = sum(_ready(pod) for pod in pods)
    assert (
        status["replicas"] == len(pods) == replicas and status["readyReplicas"] == kubelet_ready == replicas
    )
    assert {pod["spec"]["nodeName"] for pod in pods} == {"real-zone-a"}
    return round(time.monotonic() - started, 1)


def _ready(pod: Json) -> bool:
    return any(c["type"] == "Ready" and c["status"] == "True" for c in pod["status"].get("conditions") or [])


def _restarts(pods: list[Json]) -> dict[str, int]:
    return {
        pod["metadata"]["name"]: sum(c["restartCount"] for c in pod["status"].get("containerStatuses") or [])
        for pod in pods
    }
