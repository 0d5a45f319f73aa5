"""The kubelet stand-in's pure parts: zone choice, the worker's environment and volume, loopback addresses."""

from __future__ import annotations

import socket
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest

from smoothscale.contract import shared_names as contract
from smoothscale.operator.appref import AppRef
from smoothscale.operator.podset import build_pod
from smoothscale.resource import load_spec
from smoothscale.sandbox.addresses import LoopbackAddresses, random_block
from smoothscale.sandbox.downward import resource_value
from smoothscale.sandbox.podruntime import Launch
from smoothscale.sandbox.podspec import (
    AppSettings,
    app_settings,
    container_env,
    env_sources,
    grace_seconds,
    restarts_after,
    state_volume,
    unresolved,
)
from smoothscale.sandbox.processruntime import pod_env
from smoothscale.sandbox.scheduling import accepted_zones, choose_zone

ZONES = ("zone-a", "zone-b", "zone-c")


def _affinity(*expressions: dict[str, Any]) -> dict[str, Any]:
    term = {"matchExpressions": list(expressions)}
    required = {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [term]}}
    return {"affinity": {"nodeAffinity": required}}


def test_zones_follow_node_selector_and_required_affinity_else_the_least_loaded() -> None:
    assert choose_zone({}, ZONES, {"zone-a": 2, "zone-b": 1, "zone-c": 1}) == "zone-b"
    assert choose_zone({"nodeSelector": {contract.ZONE_LABEL: "zone-c"}}, ZONES, {"zone-c": 9}) == "zone-c"
    assert choose_zone({"nodeSelector": {contract.ZONE_LABEL: "zone-x"}}, ZONES, {}) is None
    not_a = _affinity({"key": contract.ZONE_LABEL, "operator": "NotIn", "values": ["zone-a"]})
    assert accepted_zones(not_a, ZONES) == ["zone-b", "zone-c"]
    only_b = _affinity(
        {"key": contract.ZONE_LABEL, "operator": "In", "values": ["zone-b"]},
        {"key": "kubernetes.io/arch", "operator": "In", "values": ["amd64"]},
    )
    assert accepted_zones(only_b, ZONES) == ["zone-b"]
    assert accepted_zones(_affinity({"key": contract.ZONE_LABEL, "operator": "DoesNotExist"}), ZONES) == []


def test_the_container_environment_resolves_values_and_field_references() -> None:
    pod = {
        "metadata": {"name": "orders-2", "namespace": "shop", "uid": "u-1", "labels": {"team": "payments"}},
        "spec": {
            "nodeName": "sandbox-zone-a",
            "containers": [
                {
                    "name": "app",
                    "env": [
                        {"name": "PLAIN", "value": "1"},
                        {"name": "POD", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}},
                        {"name": "NS", "valueFrom": {"fieldRef": {"fieldPath": "metadata.namespace"}}},
                        {"name": "IP", "valueFrom": {"fieldRef": {"fieldPath": "status.podIP"}}},
                        {"name": "TEAM", "valueFrom": {"fieldRef": {"fieldPath": "metadata.labels['team']"}}},
                        {"name": "SECRET", "valueFrom": {"secretKeyRef": {"name": "s", "key": "k"}}},
                    ],
                },
                {"name": "sidecar", "env": [{"name": "IGNORED", "value": "x"}]},
            ],
        },
    }
    assert container_env(pod, "127.0.0.9") == {
        "PLAIN": "1",
        "POD": "orders-2",
        "NS": "shop",
        "IP": "127.0.0.9",
        "TEAM": "payments",
    }


def test_state_volume_restart_policy_grace_and_app_settings() -> None:
    claim = {"name": "state", "persistentVolumeClaim": {"claimName": "orders-state-1"}}
    assert (
        state_volume({"spec": {"volumes": [{"name": "x", "emptyDir": {}}, claim]}}).claim == "orders-state-1"
    )
    assert state_volume({"spec": {"volumes": [{"name": "state", "emptyDir": {}}]}}).claim is None
    assert state_volume({"spec": {}}).claim is None
    assert restarts_after({"spec": {}}, 0) and restarts_after({"spec": {"restartPolicy": "OnFailure"}}, 1)
    assert not restarts_after({"spec": {"restartPolicy": "OnFailure"}}, 0)
    assert not restarts_after({"spec": {"restartPolicy": "Never"}}, 137)
    assert (
        grace_seconds({"spec": {}}, cap=5) == 5
        and grace_seconds({"spec": {"terminationGracePeriodSeconds": 1}}, 5) == 1
        and grace_seconds({"spec": {}}) == 30
        and grace_seconds({"spec": {"terminationGracePeriodSeconds": 90}}) == 90
    )
    app = {
        "spec": {
            "metrics": {"port": 9400, "path": "/prom"},
            "topology": {
                "subtopologies": [{"name": "0", "stateful": False}, {"name": "1", "stateful": True}]
            },
        }
    }
    assert app_settings(app) == AppSettings(9400, "/prom", frozenset({"0"}))
    assert app_settings(None) == AppSettings()
    streams = app_settings({"spec": {"runtime": "KafkaStreams"}})
    assert streams.metrics_port == contract.BRIDGE_METRICS_PORT, "the bridge's port unless the spec says"


def test_a_template_that_maps_its_settings_from_the_operators_variables_gets_them(tmp_path: Path) -> None:
    """The demo's pods shared the literal folder `$(SMOOTHSCALE_STATE_DIR)` and died on Kafka Streams' state
    lock: the stand-in expanded nothing. Now a pod the operator built gets its own name and the stand-in's
    folder of its state volume wherever the template refers to them (and literal text where it refers to
    what is defined after, or nowhere, as a kubelet leaves it)."""
    template_env = [
        {"name": "STREAMS_CLIENT_ID", "value": "$(SMOOTHSCALE_POD_NAME)"},
        {"name": "STREAMS_STATE_DIR", "value": "$(SMOOTHSCALE_STATE_DIR)"},
        {"name": "PORT", "value": "$(SMOOTHSCALE_METRICS_PORT)"},
        {"name": "EARLY", "value": "$(LATE)"},
        {"name": "LATE", "value": "$$(SMOOTHSCALE_APP) is $(SMOOTHSCALE_APP)"},
    ]
    template = {"spec": {"containers": [{"name": "app", "image": "orders:1", "env": template_env}]}}
    app_spec = load_spec({"template": template, "runtime": "KafkaStreams"})
    pod = build_pod(AppRef("shop", "orders", "u-1"), app_spec, 3, "rev")
    settings = app_settings({"spec": app_spec.model_dump(mode="json")})
    launch = Launch(pod, settings, "127.0.0.9", tmp_path / "state" / "orders-3", tmp_path / "orders-3.log")
    env = pod_env(launch)
    assert env["STREAMS_CLIENT_ID"] == "orders-3"
    assert env["STREAMS_STATE_DIR"] == env[contract.STATE_DIR_ENV] == str(launch.state_dir)
    assert env["PORT"] == env[contract.METRICS_PORT_ENV] == str(contract.BRIDGE_METRICS_PORT)
    assert env["EARLY"] == "$(LATE)"
    assert env["LATE"] == "$(SMOOTHSCALE_APP) is orders"


def test_configmaps_and_secrets_of_the_environment_come_as_a_kubelet_reads_them(tmp_path: Path) -> None:
    """`envFrom` first (with its prefix, never expanded, any value may refer to it), `...KeyRef`s in their
    place; an optional source or key that does not exist leaves its variables out, a required one keeps the
    container from starting (a kubelet's CreateContainerConfigError), naming what is missing."""
    config_ref = {"configMapKeyRef": {"name": "settings", "key": "topic"}}
    container = {
        "name": "app",
        "image": "orders:1",
        "envFrom": [
            {"prefix": "APP_", "configMapRef": {"name": "settings"}},
            {"secretRef": {"name": "credentials"}},
            {"configMapRef": {"name": "absent", "optional": True}},
        ],
        "env": [
            {"name": "TOPIC", "valueFrom": config_ref},
            {"name": "SASL", "value": "$(user):$(password)@$(APP_topic)/$(APP_raw)"},
            {
                "name": "MAYBE",
                "valueFrom": {"secretKeyRef": {"name": "credentials", "key": "x", "optional": True}},
            },
            {"name": "APP_topic", "value": "overridden"},
        ],
    }
    pod = {"metadata": {"name": "orders-0", "namespace": "shop"}, "spec": {"containers": [container]}}
    sources = {
        ("ConfigMap", "settings"): {"topic": "orders", "raw": "$(SMOOTHSCALE_APP)"},
        ("Secret", "credentials"): {"user": "shop", "password": "pw"},
    }
    assert [(ref.kind, ref.name, ref.key, ref.optional) for ref in env_sources(pod)] == [
        ("ConfigMap", "settings", None, False),
        ("Secret", "credentials", None, False),
        ("ConfigMap", "absent", None, True),
        ("ConfigMap", "settings", "topic", False),
        ("Secret", "credentials", "x", True),
    ]
    assert unresolved(pod, sources) == []
    assert unresolved(pod, {}) == ["ConfigMap settings", "Secret credentials"]
    assert unresolved(pod, {**sources, ("ConfigMap", "settings"): {"raw": ""}}) == [
        "ConfigMap settings (no key topic)"
    ]
    env = container_env(pod, "127.0.0.9", sources=sources)
    assert env == {
        "APP_topic": "overridden",
        "APP_raw": "$(SMOOTHSCALE_APP)",
        "user": "shop",
        "password": "pw",
        "TOPIC": "orders",
        "SASL": "shop:pw@orders/$(SMOOTHSCALE_APP)",
    }
    launch = Launch(pod, AppSettings(), "127.0.0.9", tmp_path / "state", tmp_path / "log", sources)
    assert pod_env(launch)["SASL"] == env["SASL"]


def test_loopback_addresses_are_never_reused_and_skip_busy_ones() -> None:
    first = random_block()
    addresses = LoopbackAddresses(first)
    busy_host = addresses.allocate(0)
    with socket.socket() as busy:
        busy.bind((_next_address(busy_host), 0))
        port = busy.getsockname()[1]
        busy.listen()
        assert addresses.allocate(port) == _next_address(_next_address(busy_host))
    assert LoopbackAddresses("127.0.0.254").allocate(0) == "127.0.0.254"
    skipping = LoopbackAddresses("127.0.0.255")
    assert skipping.allocate(0) == "127.0.1.1"
    with pytest.raises(ValueError, match="loopback"):
        LoopbackAddresses("10.0.0.1")


def _next_address(address: str) -> str:
    octets = [int(part) for part in address.split(".")]
    octets[-1] += 1
    return ".".join(map(str, octets))


def test_resources_come_through_the_downward_api_as_a_kubelet_gives_them() -> None:
    """Rounded up after the divisor (CPU in millicores); a request not set is the limit, else 0; a limit not
    set is the node's allocatable; another container's resources by its name."""
    node = {"cpu": Decimal(2), "memory": Decimal(4 * 2**30), "ephemeral-storage": Decimal(10**9)}
    app = {"name": "app", "resources": {"limits": {"cpu": "1500m", "memory": "1Gi"}}}
    proxy = {"name": "proxy", "resources": {"requests": {"cpu": "100m"}}}
    pod = {"spec": {"containers": [app, proxy]}}
    cases = {
        ("limits.cpu", None, None): "2",
        ("limits.cpu", "1m", None): "1500",
        ("requests.cpu", "1m", None): "1500",
        ("limits.memory", "1Mi", None): "1024",
        ("requests.memory", "1G", None): "2",
        ("requests.ephemeral-storage", None, None): "0",
        ("limits.ephemeral-storage", "1M", None): "1000",
        ("requests.cpu", "1m", "proxy"): "100",
        ("limits.memory", None, "proxy"): str(4 * 2**30),
        ("limits.hugepages-2Mi", None, None): None,
    }
    for (resource, divisor, container), expected in cases.items():
        ref = {"resource": resource, **({"divisor": divisor} if divisor else {})}
        ref.update({"containerName": container} if container else {})
        assert resource_value(pod, app, ref, lambda: node) == expected, (resource, divisor, container)
