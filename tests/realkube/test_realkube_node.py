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

import kubernetes
import pytest
from realkube_kit import ROOT, built_binaries, sibling_kit, wait_for

from smoothscale.sandbox.control_plane import Binaries, ControlPlane, RunningControlPlane
from smoothscale.sandbox.real_node import ZONE_LABEL, NodeBinaries, RealNode, RunningNode
from smoothscale.sandbox.real_node_demo import (
    NODE_CONTROLLERS,
    RELEASE_NAMESPACE,
    RealNodeWalk,
    chart_release,
    create_worker_app,
)

pytestmark = pytest.mark.slow
install = sibling_kit("install", "install_testkit")

NODE_BUILD = ROOT / "tools" / "node" / "build.sh"
NODE_IMAGES = ROOT / "tools" / "node" / "images.sh"
SUBNET = "10.244.27.0/24"


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

OPERATOR_ACCOUNT = f"system:serviceaccount:{RELEASE_NAMESPACE}:smoothscale"


@pytest.fixture(scope="module")
def operator_release(
    node_cluster: tuple[RunningControlPlane, RunningNode, str],
) -> Iterator[kubernetes.client.V1Pod]:
    """`helm install` of the chart with its default values (the image is the one imported into the node;
    pull policy IfNotPresent), waited on until the Deployment is available; uninstalled afterwards."""
    cp, _, _ = node_cluster
    started = time.monotonic()
    with chart_release(install.helm, install.CHART, cp) as pod:
        STEP_SECONDS["helm install: operator Ready"] = round(time.monotonic() - started, 1)
        yield pod
        started = time.monotonic()
    STEP_SECONDS["helm uninstall --wait"] = round(time.monotonic() - started, 1)


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


def test_a_streams_app_runs_scales_and_recovers_on_the_real_node(
    node_cluster: tuple[RunningControlPlane, RunningNode, str],
    operator_release: kubernetes.client.V1Pod,
) -> None:
    """`smoothscale demo --real-node`'s walk (`real_node_demo.RealNodeWalk`): 3 pods, 6, 3, a container's
    process killed by the runtime, a pod deleted with a grace period; after each step the app settles,
    balanced, and the operator's status agrees with the kubelet's pods; the workers' records show no task
    processed by two processes at once, and every task processed."""
    cp, node, image = node_cluster
    records = node.root / "records"  # removed with the node's folder
    with kubernetes.config.new_client_from_config(config_file=str(cp.kubeconfig)) as api:
        create_worker_app(api, image, records=records)
        outcomes = RealNodeWalk(api, node, records=records).run()
    STEP_SECONDS.update({f"app settled: {o.name}": o.seconds or -1.0 for o in outcomes})
    assert [o.name for o in outcomes] == list(RealNodeWalk.STEPS), outcomes
    assert all(o.seconds is not None and not o.violations for o in outcomes), outcomes
