"""A real node: containerd 2.x with runc and the CNI bridge, and a kubelet registered with the control plane
under a zone label, run a pod of the locally built operator image (`imagePullPolicy: Never`) until the
kubelet's own readiness probe passes, and leave nothing running when stopped (docs/real-node.md).

The node's binaries are built on first use (`bash tools/node/build.sh`, about 19 minutes cold, which
`.ci/run` runs first) and cached: the script returns at once on a warm machine. Only without root (runc and
the CNI bridge need it) is the test skipped.
"""

from __future__ import annotations

import ipaddress
import os
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path

import kubernetes
import pytest
from realkube_kit import ROOT, built_binaries, wait_for

from smoothscale.sandbox.control_plane import CONTROLLERS, Binaries, ControlPlane, RunningControlPlane
from smoothscale.sandbox.real_node import ZONE_LABEL, NodeBinaries, RealNode, RunningNode

pytestmark = pytest.mark.slow

NODE_BUILD = ROOT / "tools" / "node" / "build.sh"
NODE_IMAGES = ROOT / "tools" / "node" / "images.sh"
SUBNET = "10.244.27.0/24"
# Pods mount their ServiceAccount's token with the cluster's CA, which this controller publishes.
NODE_CONTROLLERS = (*CONTROLLERS, "root-ca-certificate-publisher-controller")


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


@pytest.fixture(scope="module")
def node_cluster(
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[tuple[RunningControlPlane, RunningNode, str]]:
    binaries = _node_binaries()
    image, sandbox_image, archive = _run(NODE_IMAGES)[-3:]
    root = tmp_path_factory.mktemp("node-control-plane")
    node_root = Path(tempfile.mkdtemp(prefix="ssnode-"))  # short: containerd's socket lives there
    try:
        yield from _started(root, node_root, binaries, image, sandbox_image, Path(archive))
    finally:
        shutil.rmtree(node_root, ignore_errors=True)  # containerd's unpacked images: hundreds of MB


def _started(
    root: Path, node_root: Path, binaries: NodeBinaries, image: str, sandbox_image: str, archive: Path
) -> Iterator[tuple[RunningControlPlane, RunningNode, str]]:
    with (
        ControlPlane(root, Binaries.from_folder(built_binaries()), controllers=NODE_CONTROLLERS) as cp,
        RealNode(
            node_root,
            binaries,
            cp,
            name="real-zone-a",
            zone="zone-a",
            images=archive,
            sandbox_image=sandbox_image,
            pod_subnet=SUBNET,
        ) as node,
    ):
        yield cp, node, image
    pgrep = subprocess.run(["pgrep", "-f", str(node_root)], capture_output=True, text=True, check=False)
    leftovers = pgrep.stdout.split()
    assert not leftovers, f"processes of the node still running after it stopped: {leftovers}"


def test_a_pod_of_the_built_image_turns_ready_on_the_real_node(
    node_cluster: tuple[RunningControlPlane, RunningNode, str],
) -> None:
    cp, node, image = node_cluster
    pod = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "hello", "namespace": "default"},
        "spec": {
            "nodeName": node.name,  # no scheduler runs: the pod is bound as the scheduler would bind it
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
    assert ipaddress.ip_address(running.status.pod_ip) in ipaddress.ip_network(SUBNET)
    status = running.status.container_statuses[0]
    assert status.ready and status.restart_count == 0 and status.state.running is not None
    assert status.image_id, "the kubelet reports the image the container runs"
    assert len(node.tasks()) == 2, "containerd runs the pod's sandbox and its container"
