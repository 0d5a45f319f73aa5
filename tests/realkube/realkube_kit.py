"""Helpers of the real-API-server suite (a uniquely named module: tests/ has no packages)."""

from __future__ import annotations

import functools
import importlib.util
import json
import re
import secrets
import subprocess
import sys
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any, TypeVar

import kubernetes

from smoothscale.sandbox.control_plane import RunningControlPlane

ROOT = Path(__file__).resolve().parents[2]
BUILD_SCRIPT = ROOT / "tools" / "kube" / "build.sh"
CRD = ROOT / "charts" / "smoothscale" / "crds" / "streamsapp.yaml"
GROUP, VERSION, PLURAL = "smoothscale.io", "v1alpha1", "streamsapps"
FIELD_MANAGER = "smoothscale-tests"

Json = dict[str, Any]
T = TypeVar("T")


@functools.cache
def built_binaries() -> Path:
    """The folder of etcd, kube-apiserver, kube-controller-manager and kubectl: `tools/kube/build.sh`
    builds them on a cold machine (the Go module proxy, about ten minutes on two cores) and returns at once
    on a warm one."""
    done = subprocess.run(
        ["bash", str(BUILD_SCRIPT)], capture_output=True, text=True, check=False, timeout=3600
    )
    if done.returncode != 0:
        raise RuntimeError(f"{BUILD_SCRIPT} failed ({done.returncode}):\n{done.stderr[-4000:]}")
    return Path(done.stdout.strip().splitlines()[-1])


def apply_crd(control_plane: RunningControlPlane) -> None:
    """The chart's CRD, as helm or `kubectl apply --server-side` installs it."""
    control_plane.apply_crd(CRD.read_text(), f"{PLURAL}.{GROUP}", field_manager=FIELD_MANAGER)


def wait_for(condition: Callable[[], T | None], *, timeout: float = 60.0, what: str = "condition") -> T:
    """Poll `condition()` until it returns something truthy, and return that; fail after `timeout`."""
    deadline = time.monotonic() + timeout
    while True:
        result = condition()
        if result:
            return result
        if time.monotonic() > deadline:
            raise AssertionError(f"{what}: not within {timeout:.0f} s")
        time.sleep(0.2)


def raw_request(
    api: kubernetes.client.ApiClient,
    method: str,
    path: str,
    body: object = None,
    *,
    content_type: str = "application/json",
    accept: str = "application/json",
    query: Mapping[str, str] | None = None,
) -> tuple[int, bytes]:
    """One request through the client's configuration (URL, TLS, credentials); its status and body as sent."""
    method, url, headers, serialized, _ = api.param_serialize(
        method,
        path,
        query_params=list((query or {}).items()),
        header_params={"Content-Type": content_type, "Accept": accept},
        body=body,
        auth_settings=["BearerToken"],
    )
    try:
        response = api.call_api(method, url, header_params=headers, body=serialized)
    except kubernetes.client.ApiException as error:
        return int(error.status), (error.body or "").encode() if isinstance(
            error.body, str
        ) else error.body or b""
    response.read()
    return int(response.status), bytes(response.data or b"")


def json_request(
    api: kubernetes.client.ApiClient,
    method: str,
    path: str,
    body: object = None,
    *,
    content_type: str = "application/json",
    accept: str = "application/json",
    query: Mapping[str, str] | None = None,
) -> tuple[int, Json]:
    """`raw_request` with the answer decoded: the status code and the JSON body, errors included."""
    status, data = raw_request(api, method, path, body, content_type=content_type, accept=accept, query=query)
    return status, json.loads(data or b"{}")


@dataclass
class Cluster:
    """The session's control plane seen from one test: an administrator's client and the test's namespace."""

    control_plane: RunningControlPlane
    api: kubernetes.client.ApiClient
    namespace: str

    @staticmethod
    def namespace_for(test_name: str) -> str:
        """A DNS label from the test's name, unique per run."""
        stem = re.sub(r"[^a-z0-9]+", "-", test_name.lower()).strip("-")[:40].strip("-")
        return f"{stem}-{secrets.token_hex(3)}"

    @property
    def core(self) -> kubernetes.client.CoreV1Api:
        return kubernetes.client.CoreV1Api(self.api)

    @property
    def custom(self) -> kubernetes.client.CustomObjectsApi:
        return kubernetes.client.CustomObjectsApi(self.api)

    def create_namespace(self) -> None:
        self.core.create_namespace({"metadata": {"name": self.namespace}})
        # The controller manager gives every namespace its `default` ServiceAccount; no pod without it.
        wait_for(self._has_default_account, timeout=30, what=f"{self.namespace}'s default account")

    def _has_default_account(self) -> bool:
        accounts = self.core.list_namespaced_service_account(self.namespace).items
        return any(account.metadata.name == "default" for account in accounts)

    def delete_namespace(self) -> None:
        try:
            self.core.delete_namespace(self.namespace)
        except kubernetes.client.ApiException as error:
            if error.status != 404:
                raise

    def kubectl(
        self, *args: str, check: bool = True, input: str | None = None
    ) -> subprocess.CompletedProcess[str]:
        return self.control_plane.kubectl(f"--namespace={self.namespace}", *args, check=check, input=input)

    # -- raw requests: status codes and bodies as the server sent them ---------------------------------------

    def request(
        self,
        method: str,
        path: str,
        body: object = None,
        *,
        content_type: str = "application/json",
        query: Mapping[str, str] | None = None,
    ) -> tuple[int, Json]:
        return json_request(self.api, method, path, body, content_type=content_type, query=query)

    def app_path(self, name: str | None = None, subresource: str | None = None) -> str:
        path = f"/apis/{GROUP}/{VERSION}/namespaces/{self.namespace}/{PLURAL}"
        if name is not None:
            path += f"/{name}"
        if subresource is not None:
            path += f"/{subresource}"
        return path

    def create_app(self, app: Json) -> tuple[int, Json]:
        body = {**app, "metadata": {**app["metadata"], "namespace": self.namespace}}
        return self.request("POST", self.app_path(), body)

    def app(self, name: str) -> Json:
        status, body = self.request("GET", self.app_path(name))
        assert status == 200, body
        return body


def sibling_kit(suite: str, module: str) -> ModuleType:
    """A helper module of another suite (`tests/<suite>/<module>.py`), imported under its own name, so that
    this suite and that one share one module object whichever runs first."""
    if module not in sys.modules:
        spec = importlib.util.spec_from_file_location(module, ROOT / "tests" / suite / f"{module}.py")
        assert spec is not None and spec.loader is not None
        sys.modules[module] = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(sys.modules[module])
    return sys.modules[module]
