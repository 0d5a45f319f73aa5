"""Helpers shared by the sandbox tests (a uniquely named module: tests/ has no packages)."""

from __future__ import annotations

import base64
import time
from collections.abc import Callable
from typing import Any, TypeVar

import kubernetes

from smoothscale.contract import shared_names as contract
from smoothscale.contract.configmap import encode_publication
from smoothscale.contract.publication import ClientAssignment, Publication

T = TypeVar("T")
NAMESPACE = "default"


def publication(generation: int, **pods: dict[str, list[str]]) -> Publication:
    """`publication(3, p0={"active": ["0_0"]}, p1={"standby": ["0_0"]})`."""
    return Publication(
        generation=generation,
        assignment={pod: ClientAssignment(**roles) for pod, roles in pods.items()},
    )


def configmap_body(app: str, published: Publication) -> dict[str, Any]:
    """The assignment ConfigMap as the operator writes it (Contract 3)."""
    encoded = base64.b64encode(encode_publication(published)).decode()
    return {
        "metadata": {"name": contract.assignment_configmap(app)},
        "data": {contract.GENERATION_KEY: str(published.generation)},
        "binaryData": {contract.ASSIGNMENT_KEY: encoded},
    }


def publish(core: kubernetes.client.CoreV1Api, app: str, body: dict[str, Any]) -> None:
    """Create or replace the app's assignment ConfigMap with `body`."""
    name = contract.assignment_configmap(app)
    try:
        core.replace_namespaced_config_map(name, NAMESPACE, body)
    except kubernetes.client.ApiException as error:
        if error.status != 404:
            raise
        core.create_namespaced_config_map(NAMESPACE, body)


def eventually(check: Callable[[], T | None], timeout: float = 10.0, interval: float = 0.05) -> T:
    """Poll `check` until it returns something truthy; its last value, or AssertionError on timeout."""
    deadline = time.monotonic() + timeout
    while True:
        value = check()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"not true within {timeout} s: {check}")
        time.sleep(interval)
