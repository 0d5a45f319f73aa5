"""`smoothscale demo --real-node`: the operator installed with the Helm chart on a real node, and the sample
worker's app run there by the real kubelet, scaled, crashed and deleted, each step checked.

One-time build, as root from the repository (docs/real-node.md): `bash tools/node/build.sh` (containerd, the
kubelet and kube-scheduler; prints their folder), `bash tools/node/images.sh` (the operator image and the pod
sandbox image in one archive; prints its path last), `bash tools/kube/build.sh` (the control plane; prints
its folder) and `python .ci/kube_tools.py` (helm; prints its folder).

The steps (`RealNodeWalk`): the app settles on 3 pods, is scaled to 6 and back to 3, its pods are swapped for
pods of a new template (`updateStrategy: Swap`); the runtime kills one
container's process (the kubelet restarts it in the same pod); one pod is deleted with a grace period (its
worker stops on SIGTERM; the operator creates it again). After each step the app must settle
(`observe.settle`: every pod Ready, on the published generation, every task processing where the plan puts
it) with its active tasks balanced and the operator's status agreeing with what the kubelet reports of the
pods; what does not hold is reported as a violation. `tests/realkube/test_realkube_node.py` runs the same
walk.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import subprocess
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TextIO

import kubernetes
import yaml

from smoothscale.contract import shared_names as contract

from . import invariants
from .app_view import AppReader
from .control_plane import CONTROLLERS, Binaries, ControlPlane, RunningControlPlane
from .demo import demo_app, demo_tasks, worker_env
from .environment import CHANGELOG_EPOCH_ENV, RECORD_FILE_ENV
from .observe import GroupView, Snapshot, settle
from .real_node import ZONE_LABEL, NodeBinaries, RealNode, RunningNode
from .records import processing_intervals, read_records

Json = dict[str, Any]

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
"""kube-controller-manager's controllers a real node and the chart need beyond the sandbox's."""
SANDBOX_IMAGE = "localhost/smoothscale/pause:1"
"""The pod sandbox image `tools/node/images.sh` saves beside the operator's."""
NODE_NAME = "real-zone-a"
RELEASE = "smoothscale"
RELEASE_NAMESPACE = "smoothscale-system"
APP = "orders"
APP_NAMESPACE = "streams"
STEP_TIMEOUT = 120.0
RECORD_FILE = "records.jsonl"
DELETE_GRACE = 30
"""The grace period of the walk's pod deletion, seconds (`RealNodeWalk._delete_a_pod`)."""
SWAP_ENV = "ORDERS_ROLLOUT"
"""The variable the swap step adds to the pod template: a new template, which `updateStrategy: Swap` rolls out
by replacing every pod."""
WORKER_ACCESS: list[dict[str, list[str]]] = [
    # The sample worker follows its assignment ConfigMap and its own pod (leaving), as the client does.
    {"api_groups": [""], "resources": ["configmaps"], "resource_names": [contract.assignment_configmap(APP)],
     "verbs": ["get", "list", "watch"]},
    {"api_groups": [""], "resources": ["pods"], "verbs": ["get", "list", "watch"]},
    # With spec.failover.leaseSeconds each pod reads, creates and renews its own Lease (docs/failover.md).
    {"api_groups": ["coordination.k8s.io"], "resources": ["leases"], "verbs": ["get", "create", "update"]},
]  # fmt: skip


ZONE_SPREAD: list[Json] = [
    {
        "maxSkew": 1,
        "topologyKey": ZONE_LABEL,
        "whenUnsatisfiable": "DoNotSchedule",
        "labelSelector": {"matchLabels": {contract.APP_LABEL: APP}},
    }
]
"""The app's pods spread evenly over the zones' nodes, as a user asks kube-scheduler to (the operator binds no
pod itself; kube-scheduler's default spreading is only a preference)."""


def chart_image(chart: Path) -> str:
    """The image the chart's default values run: `smoothscale/operator:<appVersion>`."""
    version = yaml.safe_load((chart / "Chart.yaml").read_text())["appVersion"]
    return f"smoothscale/operator:{version}"


def worker_app(image: str, replicas: int, records: Path | None = None) -> Json:
    """The demo's app (`demo.demo_app`), its pods the sample worker from the operator's image, reading its
    assignment with its ServiceAccount, its state in the pod's emptyDir (no volume provisioner runs), ready
    once it serves its metrics; with `records`, a folder of the host, all of them append to one record file
    there (`records.py`)."""
    app = demo_app(replicas, image)
    app["metadata"]["namespace"] = APP_NAMESPACE
    del app["spec"]["storage"]
    variables = {**worker_env(1.0), CHANGELOG_EPOCH_ENV: repr(time.time())}
    app["spec"]["template"]["spec"] = {
        "serviceAccountName": APP,
        "terminationGracePeriodSeconds": 10,
        "topologySpreadConstraints": ZONE_SPREAD,
        "containers": [
            {
                "name": "app",
                "image": image,
                "imagePullPolicy": "Never",
                "command": ["smoothscale", "worker"],
                "env": [{"name": name, "value": value} for name, value in variables.items()],
                "ports": [{"name": "metrics", "containerPort": contract.DEFAULT_METRICS_PORT}],
                "readinessProbe": {"httpGet": {"path": "/metrics", "port": "metrics"}, "periodSeconds": 1},
                "volumeMounts": [{"name": contract.STATE_VOLUME, "mountPath": "/state"}],
            }
        ],
    }
    if records is not None:
        spec = app["spec"]["template"]["spec"]
        spec["volumes"] = [{"name": "records", "hostPath": {"path": str(records), "type": "Directory"}}]
        (container,) = spec["containers"]
        container["volumeMounts"].append({"name": "records", "mountPath": "/records"})
        container["env"].append({"name": RECORD_FILE_ENV, "value": f"/records/{RECORD_FILE}"})
    return app


def create_worker_app(
    api: kubernetes.client.ApiClient, image: str, replicas: int = 3, records: Path | None = None
) -> None:
    """The sample worker's app (`worker_app`) with what `create_app` makes for it (with `records`: that
    folder made writable for the image's user, uid 10001)."""
    if records is not None:
        records.mkdir(parents=True, exist_ok=True)
        records.chmod(0o777)
    create_app(api, worker_app(image, replicas, records))


def create_app(api: kubernetes.client.ApiClient, app: Json) -> None:
    """The app's namespace, its pods' ServiceAccount (named after the app) with a Role for `WORKER_ACCESS`,
    and the app."""
    client = kubernetes.client
    core, rbac = client.CoreV1Api(api), client.RbacAuthorizationV1Api(api)
    namespace = app["metadata"]["namespace"]
    meta = client.V1ObjectMeta(name=APP, namespace=namespace)
    core.create_namespace(client.V1Namespace(metadata=client.V1ObjectMeta(name=namespace)))
    core.create_namespaced_service_account(namespace, client.V1ServiceAccount(metadata=meta))
    rules = [client.V1PolicyRule(**rule) for rule in WORKER_ACCESS]
    rbac.create_namespaced_role(namespace, client.V1Role(metadata=meta, rules=rules))
    binding = client.V1RoleBinding(
        metadata=meta,
        role_ref=client.V1RoleRef(api_group="rbac.authorization.k8s.io", kind="Role", name=APP),
        subjects=[client.RbacV1Subject(kind="ServiceAccount", name=APP, namespace=namespace)],
    )
    rbac.create_namespaced_role_binding(namespace, binding)
    client.CustomObjectsApi(api).create_namespaced_custom_object(
        contract.GROUP, contract.VERSION, namespace, contract.PLURAL, app
    )


# -- the chart -----------------------------------------------------------------------------------------------


HelmRunner = Callable[..., subprocess.CompletedProcess[str]]
"""`helm(*args, check=...)`: runs helm with its state folders set."""


@contextlib.contextmanager
def chart_release(
    helm: HelmRunner, chart: Path, cluster: RunningControlPlane, timeout: float = 180.0
) -> Iterator[kubernetes.client.V1Pod]:
    """`helm install` of the chart with its default values; yields the operator's pod once the Deployment is
    available, and uninstalls the release on exit."""
    where = ("--kubeconfig", str(cluster.kubeconfig), "--namespace", RELEASE_NAMESPACE)
    helm("install", RELEASE, str(chart), *where, "--create-namespace")
    try:
        with kubernetes.config.new_client_from_config(config_file=str(cluster.kubeconfig)) as api:
            apps, core = kubernetes.client.AppsV1Api(api), kubernetes.client.CoreV1Api(api)
            deadline = time.monotonic() + timeout
            while not _available(apps.read_namespaced_deployment(RELEASE, RELEASE_NAMESPACE)):
                if time.monotonic() > deadline:
                    raise TimeoutError(f"the chart's Deployment not available within {timeout:.0f} s")
                time.sleep(0.5)
            (pod,) = core.list_namespaced_pod(RELEASE_NAMESPACE).items
            yield pod
    finally:
        helm("uninstall", RELEASE, *where, "--wait", "--timeout=50s", check=False)


def _available(deployment: kubernetes.client.V1Deployment) -> bool:
    return deployment.status is not None and bool(deployment.status.available_replicas)


def helm_runner(binary: Path, state: Path) -> HelmRunner:
    """helm with its cache, configuration and data under `state` (never the user's own)."""
    variables = {
        **os.environ,
        "HELM_CACHE_HOME": str(state / "cache"),
        "HELM_CONFIG_HOME": str(state / "config"),
        "HELM_DATA_HOME": str(state / "data"),
    }

    def run(*args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [str(binary), *args], capture_output=True, text=True, env=variables, check=check, timeout=60
        )

    return run


# -- the walk ------------------------------------------------------------------------------------------------


@dataclass
class StepOutcome:
    """One step: how long the app took to settle after it (None: not within `STEP_TIMEOUT`), and what did
    not hold."""

    name: str
    seconds: float | None = None
    violations: list[str] = field(default_factory=list)


SnapshotView = Callable[[Snapshot, int, int, str], None]
"""`demo.ProgressView`'s signature: a snapshot, the step's number, the number of steps, its description."""


class RealNodeWalk:
    """See the module docstring. `api` is an administrator's client of the nodes' control plane; the app's
    pods must run on `nodes` (one per zone)."""

    STEPS = (
        "start on 3 pods",
        "scale to 6",
        "scale to 3",
        "swap the pods (new template)",
        "kill a container's process",
        "delete a pod",
    )

    def __init__(
        self,
        api: kubernetes.client.ApiClient,
        nodes: Sequence[RunningNode],
        view: SnapshotView | None = None,
        records: Path | None = None,
        *,
        namespace: str = APP_NAMESPACE,
        steps: int = len(STEPS),
        group_view: GroupView | None = None,
        step_timeout: float = STEP_TIMEOUT,
    ) -> None:
        """`records`: the folder given to `create_worker_app`, judged after the last step; `steps`: how many
        of `STEPS` to walk; `group_view`: Kafka's view of a Kafka Streams app's group, which must be the plan
        at each step's end (`observe.settle`); `step_timeout`: how long a step may take to settle."""
        self.api = api
        self.records = records
        self.nodes = {node.name: node for node in nodes}
        self.namespace = namespace
        self.reader = AppReader(api, namespace)
        self._view = view
        self._steps = self.STEPS[:steps]
        self._group_view = group_view
        self._step_timeout = step_timeout
        self._replicas = 3

    def run(self) -> list[StepOutcome]:
        actions: list[Callable[[StepOutcome], Callable[[list[Json]], bool]]] = [
            lambda _: _always,
            lambda _: self._scale(6),
            lambda _: self._scale(3),
            self._swap,
            self._kill_a_container,
            self._delete_a_pod,
        ]
        outcomes = []
        walked = zip(self._steps, actions[: len(self._steps)], strict=True)
        for number, (name, action) in enumerate(walked, start=1):
            outcome = StepOutcome(name)
            also = action(outcome)
            self._settle(outcome, number, also)
            outcomes.append(outcome)
            if outcome.seconds is None:
                break  # the next step would start from an unknown state
        if self.records is not None:
            outcomes[-1].violations += _judge_records(read_records(self.records / RECORD_FILE))
        return outcomes

    def _patch_app(self, spec: Json) -> None:
        """A merge patch of the app's spec, as `kubectl patch --type merge` would send it."""
        kubernetes.client.CustomObjectsApi(self.api).patch_namespaced_custom_object(
            contract.GROUP, contract.VERSION, self.namespace, contract.PLURAL, APP, {"spec": spec}
        )

    def _scale(self, replicas: int) -> Callable[[list[Json]], bool]:
        self._replicas = replicas
        self._patch_app({"replicas": replicas})
        return _always

    def _swap(self, outcome: StepOutcome) -> Callable[[list[Json]], bool]:
        """A new pod template (`updateStrategy: Swap`, as `smoothscale demo`'s host swap): the operator
        creates a pod of the new template for each old one, hands the tasks over, then deletes the old pods.
        Done when none of the old pods is left; each new one must run its first container (no restart)."""
        old = {pod["metadata"]["uid"] for pod in self.reader.pods(APP)}
        (container,) = self.reader.app(APP)["spec"]["template"]["spec"]["containers"]
        container["env"] = [*container["env"], {"name": SWAP_ENV, "value": "2"}]
        self._patch_app({"template": {"spec": {"containers": [container]}}})  # a merge patch: the whole list

        def swapped(pods: list[Json]) -> bool:
            if any(pod["metadata"]["uid"] in old for pod in pods):
                return False
            for pod in pods:
                (status,) = pod["status"].get("containerStatuses") or [{}]
                text = f"{pod['metadata']['name']} of the new template restarted {status.get('restartCount')}"
                if status.get("restartCount") != 0 and text not in outcome.violations:
                    outcome.violations.append(text)
            return True

        return swapped

    def _kill_a_container(self, outcome: StepOutcome) -> Callable[[list[Json]], bool]:
        """SIGKILL to the first pod's container through containerd, as the OOM killer would: the kubelet
        restarts it in the same pod (restartCount 1, last state exit code 137)."""
        victim = self.reader.pods(APP)[0]
        name, uid = victim["metadata"]["name"], victim["metadata"]["uid"]
        (status,) = victim["status"]["containerStatuses"]
        self.nodes[victim["spec"]["nodeName"]].ctr(
            "tasks", "kill", "--signal=SIGKILL", status["containerID"].removeprefix("containerd://")
        )

        def restarted(pods: list[Json]) -> bool:
            found = [pod for pod in pods if pod["metadata"]["name"] == name]
            if not found or found[0]["metadata"]["uid"] != uid:
                outcome.violations.append(f"{name} was replaced, not restarted in place")
                return True
            (status,) = found[0]["status"].get("containerStatuses") or [{}]
            if status.get("restartCount") != 1:
                return False
            code = ((status.get("lastState") or {}).get("terminated") or {}).get("exitCode")
            if code != 137:
                outcome.violations.append(f"{name}'s last state: exit code {code}, not 137 (SIGKILL)")
            return True

        return restarted

    def _delete_a_pod(self, outcome: StepOutcome) -> Callable[[list[Json]], bool]:
        """Delete the second pod with a `DELETE_GRACE` grace period: its worker must stop on SIGTERM, well
        before, and the kubelet then removes the pod (polled here: `settle` looks only once the app has
        settled). The period is long so that a loaded machine's slow teardown (12 s at a load average of 120)
        is not taken for a worker that ignored SIGTERM and was killed at the period's end."""
        gone = self.reader.pods(APP)[1]["metadata"]
        started = time.monotonic()
        kubernetes.client.CoreV1Api(self.api).delete_namespaced_pod(
            gone["name"], self.namespace, grace_period_seconds=DELETE_GRACE
        )
        while gone["uid"] in {pod["metadata"]["uid"] for pod in self.reader.pods(APP)}:
            if time.monotonic() - started > 2 * DELETE_GRACE:
                outcome.violations.append(f"{gone['name']} still there {2 * DELETE_GRACE} s after deletion")
                break
            time.sleep(0.2)
        stopped = time.monotonic() - started
        if stopped >= DELETE_GRACE:
            outcome.violations.append(
                f"{gone['name']} stopped after {stopped:.1f} s: at the grace period's end, not on SIGTERM"
            )
        return _always

    def _settle(self, outcome: StepOutcome, number: int, also: Callable[[list[Json]], bool]) -> None:
        started = time.monotonic()
        view = self._view

        def on_snapshot(snapshot: Snapshot) -> None:
            if view is not None:
                view(snapshot, number, len(self._steps), outcome.name)

        snapshot = settle(
            self.reader,
            APP,
            outcome.name,
            timeout=self._step_timeout,
            also=lambda s: s.replicas == self._replicas and also(self.reader.pods(APP)),
            on_snapshot=on_snapshot,
            group_view=self._group_view,
        )
        if snapshot is None:
            outcome.violations.append(
                f"not settled on {self._replicas} pods within {self._step_timeout:.0f} s"
            )
            return
        outcome.seconds = round(time.monotonic() - started, 1)
        outcome.violations += self._disagreements(snapshot)

    def _disagreements(self, snapshot: Snapshot) -> list[str]:
        """Unbalanced actives (per pod, and pods per zone); the operator's status against the kubelet's pods;
        pods off the real nodes."""
        found = []
        actives = [pod.active for pod in snapshot.pods]
        if max(actives) - min(actives) > 1:
            found.append(f"active tasks unbalanced: {actives}")
        pods = self.reader.pods(APP)
        status = self.reader.app(APP).get("status") or {}
        ready = sum(_ready(pod) for pod in pods)
        if (status.get("replicas"), status.get("readyReplicas")) != (len(pods), ready):
            found.append(
                f"status says {status.get('replicas')} pods, {status.get('readyReplicas')} ready; "
                f"the kubelet reports {len(pods)}, {ready} ready"
            )
        nodes = {pod["spec"].get("nodeName") for pod in pods}
        if not nodes <= set(self.nodes):
            found.append(f"pods on {sorted(map(str, nodes))}, not on the real nodes {sorted(self.nodes)}")
        else:
            zone_of = {pod["metadata"]["name"]: self.nodes[pod["spec"]["nodeName"]].zone for pod in pods}
            found += invariants.imbalance(self.reader.publication(APP), zone_of)
        return found


def _judge_records(records: list[Json]) -> list[str]:
    """No task ever processed by two processes at once, every task processed, from the workers' records.
    Processes are told apart by pod and pid: every worker is pid 1 of its container, and a restarted one
    again, but it never overlaps its dead self. The real kubelet writes no `exited` record: a killed
    worker's last claim (`claim_seconds`, 0.5 s) is the bound of what it may have done."""
    found = [f"records: {text}" for text in invariants.concurrent_processing(records)]
    unprocessed = set(demo_tasks()) - {interval.task for interval in processing_intervals(records)}
    if unprocessed:
        found.append(f"records: tasks never processed: {sorted(unprocessed)}")
    return found


def _always(_: list[Json]) -> bool:
    return True


def _ready(pod: Json) -> bool:
    conditions = (pod.get("status") or {}).get("conditions") or []
    return any(c.get("type") == "Ready" and c.get("status") == "True" for c in conditions)


# -- the demo ------------------------------------------------------------------------------------------------


def run_real_node_demo(
    output_dir: Path,
    out: TextIO,
    *,
    kube_bin: Path,
    node_bin: Path,
    images: Path,
    helm: Path,
    chart: Path,
    view: SnapshotView | None = None,
) -> int:
    """0 when every step settled and every check held, else 1; everything started is stopped before it
    returns, however it returns."""
    if os.geteuid() != 0:
        raise PermissionError("a real node needs root (runc, network namespaces, the CNI bridge)")
    node_root = Path(tempfile.mkdtemp(prefix="ssnode-"))  # short: containerd's socket lives there
    try:
        with (
            ControlPlane(
                output_dir / "control-plane",
                Binaries.from_folder(kube_bin),
                controllers=NODE_CONTROLLERS,
                scheduler=node_bin / "kube-scheduler",
            ) as cluster,
            RealNode(
                node_root,
                NodeBinaries.from_folder(node_bin),
                cluster,
                name=NODE_NAME,
                zone="zone-a",
                images=images,
                sandbox_image=SANDBOX_IMAGE,
            ) as node,
        ):
            out.write(f"API server {cluster.url}, kubeconfig {cluster.kubeconfig}, node {node.name}\n")
            with chart_release(helm_runner(helm, output_dir / "helm"), chart, cluster) as operator:
                name = operator.metadata.name if operator.metadata is not None else "?"
                out.write(f"operator pod {name} Ready (helm install of {chart})\n")
                out.flush()
                with kubernetes.config.new_client_from_config(config_file=str(cluster.kubeconfig)) as api:
                    records = output_dir / "records"
                    create_worker_app(api, chart_image(chart), records=records)
                    outcomes = RealNodeWalk(api, [node], view, records).run()
    finally:
        shutil.rmtree(node_root, ignore_errors=True)  # containerd's unpacked images: hundreds of MB
    for outcome in outcomes:
        settled = "not settled" if outcome.seconds is None else f"settled in {outcome.seconds:.1f} s"
        out.write(f"{outcome.name:<28} {settled}\n")
        out.writelines(f"VIOLATION {outcome.name}: {text}\n" for text in outcome.violations)
    broken = len(outcomes) < len(RealNodeWalk.STEPS) or any(o.violations for o in outcomes)
    out.write("every step settled, every check held\n" if not broken else "some steps failed\n")
    out.write(json.dumps({"settled_s": {o.name: o.seconds for o in outcomes}}) + "\n")
    out.flush()
    return 1 if broken else 0
