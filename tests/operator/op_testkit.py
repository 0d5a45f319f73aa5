"""Helpers of the operator's tests (a uniquely named module): manifests, waiting, kubectl-like reads.

The pods themselves run in the kubelet stand-in with pods faked in memory
(`smoothscale.sandbox.emulator.memoryruntime`: no processes).
"""

from __future__ import annotations

import base64
import json
import subprocess
import sys
import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from smoothscale.contract.configmap import from_configmap
from smoothscale.contract.publication import Publication
from smoothscale.control.pods import PodInfo
from smoothscale.sandbox.emulator.memoryruntime import MemoryRuntime

NAMESPACE = "default"
SMOOTHSCALE = str(Path(sys.executable).with_name("smoothscale"))


@contextmanager
def operator_process(
    command: list[str], log: Path, env: Mapping[str, str] | None = None
) -> Iterator[subprocess.Popen[bytes]]:
    """The operator as a real process (output to `log`); killed on exit unless the caller stopped it."""
    with log.open("ab") as output:
        process = subprocess.Popen(command, stdout=output, stderr=subprocess.STDOUT, env=env)
    try:
        yield process
    finally:
        if process.poll() is None:
            process.kill()
        process.wait(timeout=10)


def streamsapp(
    name: str = "orders",
    replicas: int = 3,
    partitions: int = 6,
    *,
    standbys: int = 1,
    warmups: int = 4,
    scaling: dict[str, Any] | None = None,
    storage: bool = False,
    image: str = "example/orders:1",
    probing: str = "1m",
    port: int = 8080,
) -> dict[str, Any]:
    spec: dict[str, Any] = {
        "replicas": replicas,
        "template": {"spec": {"containers": [{"name": "app", "image": image}]}},
        "topology": {"subtopologies": [{"name": "0", "partitions": partitions, "inputTopics": ["in"]}]},
        "assignment": {
            "numStandbys": standbys,
            "acceptableRecoveryLag": 1000,
            "maxWarmupReplicas": warmups,
            "probingInterval": probing,
        },
        "scaling": scaling or {},
        "metrics": {"port": port},
    }
    if storage:
        spec["storage"] = {"size": "1Gi"}
    return {
        "apiVersion": "smoothscale.io/v1alpha1",
        "kind": "StreamsApp",
        "metadata": {"name": name, "namespace": NAMESPACE},
        "spec": spec,
    }


def pod_record(
    ordinal: int,
    *,
    app: str = "orders",
    revision: str = "r1",
    leaving: str | None = None,
    reason: str | None = None,
    ready: bool = True,
    phase: str = "Running",
    deleting: bool = False,
    node: str | None = "node-0",
) -> PodInfo:
    """A pod as the operator's index holds it, for the pure modules' tests."""
    return PodInfo(
        name=f"{app}-{ordinal}",
        uid=f"uid-{ordinal}",
        app=app,
        ordinal=ordinal,
        revision=revision,
        leaving=leaving,
        leaving_reason=reason,
        node=node,
        ip="10.0.0.1",
        metrics_port=None,
        phase=phase,
        ready=ready,
        deleting=deleting,
    )


def wait_for(check: Callable[[], Any], timeout: float = 20.0, interval: float = 0.1, what: str = "") -> Any:
    """Poll `check` until it returns something truthy; fail with `what` (and the last value) on timeout."""
    deadline = time.monotonic() + timeout
    last: Any = None
    while time.monotonic() < deadline:
        last = check()
        if last:
            return last
        time.sleep(interval)
    raise AssertionError(f"timed out after {timeout}s waiting for {what or check}: last value {last!r}")


class Kubectl:
    """What a person would look at with kubectl: the app, its pods, its ConfigMap, its events."""

    def __init__(self, client: Any) -> None:
        import kubernetes  # noqa: PLC0415

        self.core = kubernetes.client.CoreV1Api(client)
        self.custom = kubernetes.client.CustomObjectsApi(client)
        self.api_exception = kubernetes.client.ApiException

    def apply(self, body: dict[str, Any]) -> None:
        self.custom.create_namespaced_custom_object(
            "smoothscale.io", "v1alpha1", NAMESPACE, "streamsapps", body
        )

    def put_secret(self, name: str, data: dict[str, str]) -> None:
        """Create the Secret `name` with `data` (plain text, encoded here), or replace its data."""
        encoded = {key: base64.b64encode(value.encode()).decode() for key, value in data.items()}
        body = {"metadata": {"name": name}, "data": encoded}
        try:
            self.core.create_namespaced_secret(NAMESPACE, body)
        except self.api_exception:
            self.core.patch_namespaced_secret(name, NAMESPACE, {"data": encoded})

    def patch_app(self, name: str, patch: dict[str, Any]) -> None:
        self.custom.patch_namespaced_custom_object(
            "smoothscale.io", "v1alpha1", NAMESPACE, "streamsapps", name, patch
        )

    def app(self, name: str = "orders") -> dict[str, Any]:
        return dict(
            self.custom.get_namespaced_custom_object(
                "smoothscale.io", "v1alpha1", NAMESPACE, "streamsapps", name
            )
        )

    def status(self, name: str = "orders") -> dict[str, Any]:
        return dict(self.app(name).get("status") or {})

    def condition(self, kind: str, name: str = "orders") -> dict[str, Any]:
        return next((c for c in self.status(name).get("conditions", []) if c["type"] == kind), {})

    def wait_condition(self, kind: str, what: str, timeout: float = 30.0, **wanted: str) -> dict[str, Any]:
        """The app's condition `kind` once each `wanted` field (`status`, `reason`) has that value."""

        def matching() -> dict[str, Any] | None:
            found = self.condition(kind)
            return found if all(found.get(field) == value for field, value in wanted.items()) else None

        found: dict[str, Any] = wait_for(matching, timeout=timeout, what=what)
        return found

    def pods(self, app: str = "orders") -> dict[str, Any]:
        items = self.core.list_namespaced_pod(NAMESPACE, label_selector=f"smoothscale.io/app={app}").items
        return {pod.metadata.name: pod for pod in items}

    def annotate(self, pod: str, annotations: dict[str, str | None]) -> None:
        self.core.patch_namespaced_pod(pod, NAMESPACE, {"metadata": {"annotations": annotations}})

    def delete_pod(self, pod: str) -> None:
        self.core.delete_namespaced_pod(pod, NAMESPACE)

    def publication(self, app: str = "orders") -> Publication | None:
        try:
            configmap = self.core.read_namespaced_config_map(f"{app}-assignment", NAMESPACE)
        except self.api_exception as error:
            if error.status == 404:
                return None
            raise
        return from_configmap(self.core.api_client.sanitize_for_serialization(configmap))

    def events(self, name: str = "orders") -> list[tuple[str, str, str]]:
        """(type, reason, message) of the app's events, oldest first."""
        items = self.core.list_namespaced_event(NAMESPACE).items
        ours = [e for e in items if e.involved_object.name == name and e.involved_object.kind == "StreamsApp"]
        return [(e.type, e.reason, e.message) for e in ours]

    def reasons(self, name: str = "orders") -> set[str]:
        return {reason for _, reason, _ in self.events(name)}


def actives(publication: Publication | None) -> dict[str, str]:
    """task -> pod of the published actives."""
    return publication.active_owner() if publication is not None else {}


def restored(fake: MemoryRuntime) -> bool:
    """Every task on every pod caught up (within the emulator's catch-up lag)."""
    with fake.lock:
        return bool(fake.pods) and all(
            lag <= fake.catch_up_lag for pod in fake.pods.values() for lag in pod.lags.values()
        )


def settled_balance(kube: Kubectl, fake: MemoryRuntime, pods: int, tasks: int) -> Publication:
    """The publication once balanced on `pods` pods, every copy restored and the app Stable: the state a
    user changes a running app from. Taken at the first balanced generation instead, an active still
    restoring may move to a caught-up standby in the next plan (KIP-441), as a loaded CI run showed."""
    wait_for(lambda: balanced(kube.publication(), pods, tasks), what=f"balance on {pods}")
    wait_for(lambda: restored(fake), what="every pod's state restored")
    wait_for(lambda: kube.condition("Stable").get("status") == "True", what="Stable")
    published = kube.publication()
    assert published is not None and balanced(published, pods, tasks)
    return published


def balanced(publication: Publication | None, pods: int, tasks: int) -> bool:
    """Every task active, on `pods` pods, none with more than one task above another."""
    if publication is None or publication.revoking:
        return False
    counts = [len(a.active) for a in publication.assignment.values()]
    counts += [0] * (pods - len(counts))
    return sum(counts) == tasks and len(counts) == pods and max(counts) - min(counts) <= 1


def read_journal(path: Path) -> list[dict[str, Any]]:
    """The operator's journal records, oldest first."""
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
