"""Helpers of the operations CLI's tests (a uniquely named module): the CLI, manifests, waiting, and a
recorder of every published generation."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any

import kubernetes
from click.testing import CliRunner, Result

from smoothscale.cli.main import cli
from smoothscale.contract.configmap import from_configmap
from smoothscale.contract.publication import Publication
from smoothscale.sandbox.emulator import RunningEmulator

NAMESPACE = "default"
SAPP = ("smoothscale.io", "v1alpha1", NAMESPACE, "streamsapps")


def smoothscale(cluster: RunningEmulator, *args: str) -> Result:
    """`smoothscale ARGS --kubeconfig <the emulator's>`."""
    return CliRunner().invoke(cli, [*args, "--kubeconfig", str(cluster.kubeconfig)])


def streamsapp(
    name: str = "orders", replicas: int = 3, partitions: int = 12, **assignment: Any
) -> dict[str, Any]:
    return {
        "apiVersion": "smoothscale.io/v1alpha1",
        "kind": "StreamsApp",
        "metadata": {"name": name, "namespace": NAMESPACE},
        "spec": {
            "replicas": replicas,
            "template": {"spec": {"containers": [{"name": "app", "image": "example/orders:1"}]}},
            "topology": {"subtopologies": [{"name": "0", "partitions": partitions, "inputTopics": ["in"]}]},
            "assignment": {
                "numStandbys": 1,
                "acceptableRecoveryLag": 1000,
                "maxWarmupReplicas": 4,
                "probingInterval": "1m",
                **assignment,
            },
            "metrics": {"port": 8080},
        },
    }


def wait_for(check: Callable[[], Any], timeout: float = 20.0, what: str = "") -> Any:
    deadline = time.monotonic() + timeout
    last: Any = None
    while time.monotonic() < deadline:
        last = check()
        if last:
            return last
        time.sleep(0.1)
    raise AssertionError(f"timed out after {timeout}s waiting for {what or check}: last value {last!r}")


def publication(core: kubernetes.client.CoreV1Api, app: str = "orders") -> Publication | None:
    try:
        configmap = core.read_namespaced_config_map(f"{app}-assignment", NAMESPACE)
    except kubernetes.client.ApiException as error:
        if error.status == 404:
            return None
        raise
    return from_configmap(core.api_client.sanitize_for_serialization(configmap))


def balanced(published: Publication | None, pods: int, tasks: int) -> bool:
    """Every task active, on `pods` pods, none with more than one task above another, nothing moving."""
    if published is None or published.revoking:
        return False
    if any(roles.warmup for roles in published.assignment.values()):
        return False
    counts = [len(roles.active) for roles in published.assignment.values() if roles.active]
    return sum(counts) == tasks and len(counts) == pods and max(counts) - min(counts) <= 1


class Generations:
    """Every generation of an app's assignment ConfigMap, as a watch delivers it (none is skipped: each
    write is one event), recorded in a thread while the test acts."""

    def __init__(self, client: kubernetes.client.ApiClient, app: str = "orders") -> None:
        self.core = kubernetes.client.CoreV1Api(client)
        self.app = app
        self.seen: list[Publication] = []
        self._stopped = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def __enter__(self) -> Generations:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stopped.set()
        self._thread.join(timeout=5)

    def _run(self) -> None:
        """Short watches, each resuming at the last resourceVersion seen, until the test is done."""
        version: str | None = None
        while not self._stopped.is_set():
            stream = kubernetes.watch.Watch().stream(
                self.core.list_namespaced_config_map,
                NAMESPACE,
                label_selector=f"smoothscale.io/app={self.app}",
                resource_version=version,
                timeout_seconds=1,
            )
            for event in stream:
                version = event["object"].metadata.resource_version
                self._record(event["object"].binary_data or {})

    def _record(self, binary: dict[str, str]) -> None:
        if "assignment.json.gz" in binary:
            published = from_configmap({"binaryData": binary})
            if not self.seen or self.seen[-1].generation != published.generation:
                self.seen.append(published)

    def moves(self, since_generation: int = 0) -> dict[str, list[str]]:
        """task -> the pods it became active on, in order, in the generations after `since_generation`."""
        owners: dict[str, str] = {}
        out: dict[str, list[str]] = {}
        for published in self.seen:
            for task, pod in published.active_owner().items():
                if owners.get(task) not in (None, pod) and published.generation > since_generation:
                    out.setdefault(task, []).append(pod)
                owners[task] = pod
        return out
