"""Pods the operator creates run restricted (non-root, no privilege escalation, no capabilities, the
runtime's seccomp profile) unless the app's template asks for something else: tested as data."""

from __future__ import annotations

from typing import Any

from smoothscale.operator.appref import AppRef
from smoothscale.operator.podset import build_pod
from smoothscale.resource import load_spec

APP = AppRef("streams", "orders", "uid-1")


def _pod(pod_security: dict[str, Any] | None = None, container_security: dict[str, Any] | None = None) -> Any:
    container: dict[str, Any] = {"name": "app", "image": "orders:1"}
    if container_security is not None:
        container["securityContext"] = container_security
    template_spec: dict[str, Any] = {"containers": [container], "initContainers": [dict(container, name="i")]}
    if pod_security is not None:
        template_spec["securityContext"] = pod_security
    spec = load_spec(
        {
            "template": {"spec": template_spec},
            "topology": {"subtopologies": [{"name": "0", "partitions": 2}]},
        }
    )
    return build_pod(APP, spec, 0, "abc")["spec"]


def test_a_template_without_a_security_context_gets_the_restricted_one() -> None:
    spec = _pod()
    assert spec["securityContext"] == {"runAsNonRoot": True, "seccompProfile": {"type": "RuntimeDefault"}}
    for container in (*spec["containers"], *spec["initContainers"]):
        assert container["securityContext"] == {
            "allowPrivilegeEscalation": False,
            "capabilities": {"drop": ["ALL"]},
        }


def test_what_the_template_sets_wins_and_the_rest_stays_restricted() -> None:
    spec = _pod(
        pod_security={"runAsNonRoot": False, "runAsUser": 0},
        container_security={"capabilities": {"add": ["NET_ADMIN"]}},
    )
    assert spec["securityContext"] == {
        "runAsNonRoot": False,
        "runAsUser": 0,
        "seccompProfile": {"type": "RuntimeDefault"},
    }
    assert spec["containers"][0]["securityContext"] == {
        "allowPrivilegeEscalation": False,
        "capabilities": {"add": ["NET_ADMIN"]},
    }


def test_pods_of_two_apps_do_not_share_the_defaults() -> None:
    first = _pod()
    first["securityContext"]["seccompProfile"]["type"] = "Unconfined"
    first["containers"][0]["securityContext"]["capabilities"]["drop"].append("X")
    assert _pod()["securityContext"]["seccompProfile"] == {"type": "RuntimeDefault"}
    assert _pod()["containers"][0]["securityContext"]["capabilities"] == {"drop": ["ALL"]}
