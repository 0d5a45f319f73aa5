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

from smoothscale.operator.appref import AppRef
from smoothscale.operator.podset import build_pod
from smoothscale.resource import load_spec
from smoothscale.sandbox.control_plane import Binaries, ControlPlane, RunningControlPlane
from smoothscale.sandbox.envexpansion import expand_words
from smoothscale.sandbox.kafka.broker import KafkaCluster
from smoothscale.sandbox.kubelet import read_env_sources
from smoothscale.sandbox.podspec import container_env, unresolved
from smoothscale.sandbox.real_node import ZONE_LABEL, NodeBinaries, RealNode, RunningNode
from smoothscale.sandbox.real_node_demo import (
    APP_NAMESPACE,
    NODE_CONTROLLERS,
    RELEASE_NAMESPACE,
    RealNodeWalk,
    chart_release,
    create_worker_app,
)
from smoothscale.sandbox.real_node_kafka import KAFKA_NAMESPACE, walk_java_app
from smoothscale.sandbox.real_node_kafka import STEPS as JAVA_STEPS

pytestmark = pytest.mark.slow
install = sibling_kit("install", "install_testkit")

NODE_BUILD = ROOT / "tools" / "node" / "build.sh"
NODE_IMAGES = ROOT / "tools" / "node" / "images.sh"
JAVA_IMAGE = ROOT / "tools" / "image" / "java-app.sh"


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


ZONES = ("zone-a", "zone-b")
"""One real node per zone, each with its own bridge, pod subnet and cgroup root (`RealNode`)."""
NodeCluster = tuple[RunningControlPlane, list[RunningNode], str]


@pytest.fixture(scope="module")
def node_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[NodeCluster]:
    binaries = _node_binaries()
    with _timed("images (tools/node/images.sh)"):
        image, sandbox_image, archive = _run(NODE_IMAGES)[-3:]
    root = tmp_path_factory.mktemp("node-control-plane")
    node_roots = [Path(tempfile.mkdtemp(prefix="ssnode-")) for _ in ZONES]  # short: containerd's socket
    try:
        yield from _started(root, node_roots, binaries, image, sandbox_image, Path(archive))
    finally:
        for node_root in node_roots:
            shutil.rmtree(node_root, ignore_errors=True)  # containerd's unpacked images: hundreds of MB
        print(json.dumps({"real_node_step_seconds": STEP_SECONDS}))


def _subnet(index: int) -> str:
    return f"10.244.{27 + index}.0/24"


def _started(
    root: Path, node_roots: list[Path], binaries: NodeBinaries, image: str, sandbox_image: str, archive: Path
) -> Iterator[NodeCluster]:
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
        nodes = []
        for index, (zone, node_root) in enumerate(zip(ZONES, node_roots, strict=True)):
            node = RealNode(
                node_root,
                binaries,
                cp,
                name=f"real-{zone}",
                zone=zone,
                images=archive,
                sandbox_image=sandbox_image,
                pod_subnet=_subnet(index),
                bridge=f"smoothscale{index}",
            )
            with _timed(f"node {node.name} start (containerd, images imported, kubelet Ready)"):
                nodes.append(node.start())
            stack.callback(
                _timed_call, f"node {node.name} stop (its pods deleted, kubelet, containerd)", node.stop
            )
        yield cp, nodes, image
    for node_root in node_roots:
        pgrep = subprocess.run(["pgrep", "-f", str(node_root)], capture_output=True, text=True, check=False)
        leftovers = pgrep.stdout.split()
        assert not leftovers, f"processes of the node still running after it stopped: {leftovers}"
    for index in range(len(ZONES)):
        assert not Path(f"/sys/class/net/smoothscale{index}").exists(), "the node's bridge is removed"
        for hierarchy in ("cpu", "memory", "pids"):
            assert not Path(f"/sys/fs/cgroup/{hierarchy}/smoothscale-real-{ZONES[index]}").exists()


def _timed_call(step: str, call: Callable[[], None]) -> None:
    with _timed(step):
        call()


def test_a_pod_of_the_built_image_turns_ready_on_the_real_node(node_cluster: NodeCluster) -> None:
    cp, nodes, image = node_cluster
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
        zones = [core.read_node(node.name).metadata.labels[ZONE_LABEL] for node in nodes]
        assert zones == list(ZONES), "each real node registered with its zone"
        core.create_namespaced_pod("default", pod)

        def ready() -> kubernetes.client.V1Pod | None:
            found = core.read_namespaced_pod("hello", "default")
            conditions = found.status.conditions or []
            return found if any(c.type == "Ready" and c.status == "True" for c in conditions) else None

        running = wait_for(ready, timeout=180, what="the pod Ready (the kubelet's httpGet probe passing)")
    names = [node.name for node in nodes]
    assert running.spec.node_name in names, "kube-scheduler bound it to a real node"
    index = names.index(running.spec.node_name)
    node = nodes[index]
    assert ipaddress.ip_address(running.status.pod_ip) in ipaddress.ip_network(_subnet(index))
    status = running.status.container_statuses[0]
    assert status.ready and status.restart_count == 0 and status.state.running is not None
    assert status.image_id, "the kubelet reports the image the container runs"
    assert len(node.tasks()) == 2, "containerd runs the pod's sandbox and its container"


# -- $(NAME) expansion: the kubelet stand-in against the real kubelet ----------------------------------------

ENV_APP = AppRef("default", "expansion", "uid-expansion")
OPTIONAL_X = {"key": "x", "optional": True}
ENV_CASES: list[dict[str, Any]] = [
    {"name": "EARLY", "value": "early"},
    {"name": "DEFINED", "value": "$(EARLY)-x"},
    {"name": "CHAIN", "value": "$(DEFINED)/y"},
    {"name": "LATER", "value": "$(LATE)"},
    {"name": "UNDEFINED", "value": "a-$(NOPE)-b"},
    {"name": "ESCAPED", "value": "$$(EARLY)"},
    {"name": "DOLLARS", "value": "a$$b$$$$c$"},
    {"name": "ODD_DOLLARS", "value": "$$$(EARLY)"},
    {"name": "NESTED", "value": "$(EARLY$(EARLY))"},
    {"name": "UNTERMINATED", "value": "x$(EARLY"},
    {"name": "OPEN_ONLY", "value": "$($($("},
    {"name": "EMPTY_NAME", "value": "$()"},
    {"name": "SHELL_STYLE", "value": "$EARLY ${EARLY} $? $"},
    {"name": "SELF", "value": "$(SELF)+"},
    {"name": "IMAGE_ENV", "value": "$(PATH)"},
    {"name": "EMPTY", "value": ""},
    {"name": "AROUND_EMPTY", "value": "a$(EMPTY)b"},
    {"name": "DUP", "value": "one"},
    {"name": "DUP_SEEN", "value": "$(DUP)"},
    {"name": "DUP", "value": "two"},
    {"name": "NODE", "valueFrom": {"fieldRef": {"fieldPath": "spec.nodeName"}}},
    {"name": "NOT_EXPANDED", "valueFrom": {"fieldRef": {"fieldPath": "metadata.annotations['ref']"}}},
    {"name": "FIELDS", "value": "$(NODE):$(NOT_EXPANDED)"},
    {"name": "STATE_DIR", "value": "$(SMOOTHSCALE_STATE_DIR)/x"},
    {"name": "CLIENT_ID", "value": "$(SMOOTHSCALE_POD_NAME)-$(SMOOTHSCALE_NAMESPACE)-$(SMOOTHSCALE_APP)"},
    {"name": "PORTS", "value": "$(SMOOTHSCALE_METRICS_PORT) $(SMOOTHSCALE_ASSIGNMENT_CONFIGMAP)"},
    {"name": "FROM_CONFIGMAP", "valueFrom": {"configMapKeyRef": {"name": "env-config", "key": "color"}}},
    {"name": "FROM_SECRET", "valueFrom": {"secretKeyRef": {"name": "env-secret", "key": "token"}}},
    {
        "name": "ABSENT_KEY",
        "valueFrom": {"configMapKeyRef": {"name": "env-config", "key": "x", "optional": True}},
    },
    {
        "name": "ABSENT_MAP",
        "valueFrom": {"configMapKeyRef": {"name": "absent", "key": "x", "optional": True}},
    },
    {"name": "FROM_ENV_FROM", "value": "$(CFG_color)-$(token)-$(CFG_ref)-$(FROM_CONFIGMAP)"},
    {"name": "CFG_color", "value": "red"},
    *(
        {"name": name, "valueFrom": {"resourceFieldRef": {"resource": resource, **divisor}}}
        for name, resource, divisor in (
            ("CPU_LIMIT", "limits.cpu", {}),
            ("CPU_LIMIT_MILLI", "limits.cpu", {"divisor": "1m"}),
            ("CPU_REQUEST_MILLI", "requests.cpu", {"divisor": "1m"}),
            ("MEMORY_LIMIT", "limits.memory", {}),
            ("MEMORY_REQUEST_MI", "requests.memory", {"divisor": "1Mi"}),
            ("STORAGE_REQUEST", "requests.ephemeral-storage", {}),
        )
    ),
    {"name": "RESOURCES", "value": "$(CPU_LIMIT_MILLI)m/$(MEMORY_LIMIT)"},
    {"name": "LATE", "value": "late"},
]
"""A template's tricky variables, after the operator's own (`build_pod` puts them first)."""
ENV_FROM: list[dict[str, Any]] = [
    {"prefix": "CFG_", "configMapRef": {"name": "env-config"}},
    {"secretRef": {"name": "env-secret"}},
    {"configMapRef": {"name": "absent", "optional": True}},
]
"""Variables of a ConfigMap and a Secret, before the whole `env` list; an optional one that does not exist."""
ENV_ARGS = ["$(LATE)", "$(NOPE)", "$$(EARLY)", "$(CHAIN)", "$(SMOOTHSCALE_POD_NAME)", "$(", "$$", "$(PATH)"]
"""`args` expand from the final environment: later variables too."""
PRINT_ENV = (
    "import json, os, sys; "
    "open('/dev/termination-log', 'w').write(json.dumps({'env': dict(os.environ), 'argv': sys.argv[1:]}))"
)


def test_the_stand_ins_env_expansion_is_the_real_kubelets(node_cluster: NodeCluster) -> None:
    """The same pod, built by the operator (its variables first, then the template's tricky ones, a
    ConfigMap's and a Secret's, its resources', and a command and args with references), run by the real
    kubelet and expanded by the kubelet stand-in (`podspec.container_env`, `envexpansion.expand_words`,
    the ConfigMap and Secret read as the stand-in reads them): the container reports every variable and
    its arguments exactly as the stand-in makes them."""
    cp, _, image = node_cluster
    template = {
        "metadata": {"annotations": {"ref": "$(EARLY)"}},
        "spec": {
            "containers": [
                {
                    "name": "env",
                    "image": image,
                    "imagePullPolicy": "Never",
                    "command": ["python", "-c", PRINT_ENV, "$(EARLY)", "$(UNDEFINED)"],
                    "args": ENV_ARGS,
                    "env": ENV_CASES,
                    "envFrom": ENV_FROM,
                    "resources": {
                        "requests": {"cpu": "250m", "memory": "64Mi"},
                        "limits": {"cpu": "500m", "memory": "128Mi"},
                    },
                }
            ],
        },
    }
    pod = build_pod(ENV_APP, load_spec({"runtime": "KafkaStreams", "template": template}), 0, "env")
    pod["metadata"].pop("ownerReferences")  # no StreamsApp here: the garbage collector would take the pod
    pod["spec"]["restartPolicy"] = "Never"
    with kubernetes.config.new_client_from_config(config_file=str(cp.kubeconfig)) as api:
        core = kubernetes.client.CoreV1Api(api)
        config = {"color": "blue", "ref": "$(EARLY)"}
        core.create_namespaced_config_map("default", {"metadata": {"name": "env-config"}, "data": config})
        secret = {"metadata": {"name": "env-secret"}, "stringData": {"token": "s3cr3t"}}
        core.create_namespaced_secret("default", secret)
        core.create_namespaced_pod("default", pod)
        try:

            def reported() -> kubernetes.client.V1Pod | None:
                found = core.read_namespaced_pod(pod["metadata"]["name"], "default")
                statuses = found.status.container_statuses or []
                return found if statuses and statuses[0].state.terminated is not None else None

            ran = wait_for(reported, timeout=180, what="the container's report (its termination message)")
            running = api.sanitize_for_serialization(ran)
            sources = read_env_sources(core, running)  # as the stand-in reads them
        finally:
            core.delete_namespaced_pod(pod["metadata"]["name"], "default", grace_period_seconds=0)
            core.delete_namespaced_config_map("env-config", "default")
            core.delete_namespaced_secret("env-secret", "default")
    terminated = running["status"]["containerStatuses"][0]["state"]["terminated"]
    assert terminated["exitCode"] == 0, terminated
    real = json.loads(terminated["message"])
    assert not unresolved(running, sources)
    stand_in = container_env(running, running["status"]["podIP"], sources=sources)
    listed = {variable["name"] for variable in running["spec"]["containers"][0]["env"]}
    assert {name: real["env"].get(name) for name in listed | set(stand_in)} == {
        name: stand_in.get(name) for name in listed | set(stand_in)
    }
    (container,) = running["spec"]["containers"]
    assert real["argv"] == expand_words(container["command"][3:] + container["args"], stand_in)
    # What the cases show, spelled out: the operator's variables come first, so the template's refer to them.
    assert stand_in["CLIENT_ID"] == "expansion-0-default-expansion"
    assert (stand_in["LATER"], stand_in["ESCAPED"], stand_in["DUP_SEEN"]) == ("$(LATE)", "$(EARLY)", "one")
    assert stand_in["FROM_ENV_FROM"] == "blue-s3cr3t-$(EARLY)-blue" and stand_in["CFG_color"] == "red"
    assert (stand_in["RESOURCES"], stand_in["MEMORY_REQUEST_MI"]) == ("500m/134217728", "64")


# -- the operator, installed with the chart ------------------------------------------------------------------

OPERATOR_ACCOUNT = f"system:serviceaccount:{RELEASE_NAMESPACE}:smoothscale"


@pytest.fixture(scope="module")
def operator_release(node_cluster: NodeCluster) -> Iterator[kubernetes.client.V1Pod]:
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
    node_cluster: NodeCluster, operator_release: kubernetes.client.V1Pod
) -> None:
    cp, nodes, _ = node_cluster
    pod = operator_release
    (node,) = (node for node in nodes if node.name == pod.spec.node_name)
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


def test_a_streams_app_runs_scales_and_recovers_on_the_real_nodes(
    node_cluster: NodeCluster, operator_release: kubernetes.client.V1Pod
) -> None:
    """`smoothscale demo --real-node`'s walk (`real_node_demo.RealNodeWalk`): 3 pods, 6, 3, every pod
    swapped for one of a new template, a container's process killed by the runtime, a pod deleted with a
    grace period; after each step the app settles, balanced, and the operator's status agrees with the
    kubelet's pods (the swap: none of the old pods left, no new one restarted); the workers' records show no
    task processed by two processes at once, and every task processed."""
    cp, nodes, image = node_cluster
    records = nodes[0].root / "records"  # removed with the node's folder
    with kubernetes.config.new_client_from_config(config_file=str(cp.kubeconfig)) as api:
        create_worker_app(api, image, records=records)
        try:
            outcomes = RealNodeWalk(api, nodes, records=records).run()
        finally:  # its pods stop now, not with the nodes: the next test has the CPU to itself
            kubernetes.client.CoreV1Api(api).delete_namespace(APP_NAMESPACE)
    STEP_SECONDS.update({f"app settled: {o.name}": o.seconds or -1.0 for o in outcomes})
    assert [o.name for o in outcomes] == list(RealNodeWalk.STEPS), outcomes
    assert all(o.seconds is not None and not o.violations for o in outcomes), {
        o.name: o.violations for o in outcomes if o.violations
    }


# -- the Java sample Kafka Streams app, from its own image, against three brokers ----------------------------


@pytest.mark.timeout(1500)  # three steps of up to 300 s each, the brokers, the image's import and the checks
def test_the_java_sample_app_scales_on_the_real_nodes_against_kafka(
    node_cluster: NodeCluster, operator_release: kubernetes.client.V1Pod, tmp_path: Path
) -> None:
    """The sample Kafka Streams app's image (`tools/image/java-app.sh`) imported into the node; three brokers
    on loopback that pods reach at the node's bridge address (a forwarded listener); the app scaled 3 -> 6
    -> 3 with orders flowing: each step settles with Kafka's view of the group the operator's plan,
    balanced, the status agreeing with the kubelet's pods, and every order is counted once in the totals."""
    cp, nodes, _ = node_cluster
    with _timed("java image (tools/image/java-app.sh)"):
        image, archive = _run(JAVA_IMAGE)[-2:]
    with _timed("java image imported"):
        for node in nodes:
            node.ctr("images", "import", archive)
    started = time.monotonic()
    with (
        KafkaCluster(tmp_path / "kafka", brokers=3, advertise=nodes[0].gateway) as kafka,
        kubernetes.config.new_client_from_config(config_file=str(cp.kubeconfig)) as api,
    ):
        STEP_SECONDS["java: 3 brokers started"] = round(time.monotonic() - started, 1)
        try:
            outcome = walk_java_app(api, nodes, kafka, image, tmp_path)
        finally:  # its pods stop before the brokers do
            kubernetes.client.CoreV1Api(api).delete_namespace(KAFKA_NAMESPACE)
    STEP_SECONDS.update({f"java app settled: {o.name}": o.seconds or -1.0 for o in outcome.steps})
    assert [o.name for o in outcome.steps] == list(RealNodeWalk.STEPS[:JAVA_STEPS]), outcome
    assert all(o.seconds is not None and not o.violations for o in outcome.steps), {
        o.name: o.violations for o in outcome.steps if o.violations
    }
    assert outcome.orders > 0 and not outcome.problems, (outcome.orders, outcome.problems)
