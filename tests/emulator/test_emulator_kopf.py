"""A tiny real kopf operator, run in-process with `KopfRunner`, against the emulator over HTTP."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import kopf
import kubernetes
from emulator_testkit import sapp
from kopf.testing import KopfRunner

from smoothscale.sandbox.emulator import RunningEmulator

GROUP, VERSION, PLURAL = "smoothscale.io", "v1alpha1", "streamsapps"


def _eventually(check: Callable[[], Any], timeout: float = 15.0) -> Any:
    deadline = time.monotonic() + timeout
    while True:
        result = check()
        if result or time.monotonic() > deadline:
            return result
        time.sleep(0.1)


def test_a_kopf_operator_handles_creation_and_deletion(
    threaded: RunningEmulator, k8s: kubernetes.client.ApiClient
) -> None:
    registry = kopf.OperatorRegistry()
    deleted: list[str] = []

    @kopf.on.login(registry=registry)
    def login(**_: Any) -> kopf.ConnectionInfo:
        return kopf.ConnectionInfo(server=threaded.url, insecure=True, default_namespace="default")

    @kopf.on.create(GROUP, VERSION, PLURAL, registry=registry)
    def created(spec: kopf.Spec, patch: kopf.Patch, **_: Any) -> None:
        patch.status["observedReplicas"] = spec["replicas"]

    @kopf.on.delete(GROUP, VERSION, PLURAL, registry=registry)
    def removed(name: str, **_: Any) -> None:
        deleted.append(name)

    custom = kubernetes.client.CustomObjectsApi(k8s)
    core = kubernetes.client.CoreV1Api(k8s)

    def read() -> dict[str, Any] | None:
        try:
            return dict(custom.get_namespaced_custom_object(GROUP, VERSION, "default", PLURAL, "orders"))
        except kubernetes.client.ApiException as exc:
            assert exc.status == 404
            return None

    settings = kopf.OperatorSettings()
    settings.posting.loggers = True  # post handler logs as Events (off by default in kopf 1.45)
    with KopfRunner(
        ["run", "-A", "--standalone"], registry=registry, settings=settings, timeout=30
    ) as runner:
        custom.create_namespaced_custom_object(GROUP, VERSION, "default", PLURAL, sapp("orders", replicas=3))
        app = _eventually(lambda: (obj := read()) and obj.get("status", {}).get("observedReplicas") and obj)
        assert app, read()
        assert app["status"]["observedReplicas"] == 3
        assert app["metadata"][
            "finalizers"
        ]  # kopf's finalizer, added with a resourceVersion-tested JSON patch

        def posted() -> bool:  # kopf posts its handler logs as core v1 Events, named with generateName
            events = core.list_namespaced_event("default").items
            return any(event.involved_object.name == "orders" for event in events)

        assert _eventually(posted)

        custom.delete_namespaced_custom_object(GROUP, VERSION, "default", PLURAL, "orders")
        assert _eventually(lambda: read() is None), read()
        assert deleted == ["orders"]

    assert runner.exception is None
    assert runner.exit_code == 0
