"""The kinds the emulator serves: Kubernetes built-ins, our `StreamsApp`, KEDA's `ScaledObject`, and
optionally kopf's peering.

One helper, `build_emulator()`, gives every test and the demo the same API surface; the pieces stay separate
so that a test can register exactly what it needs.
"""

from __future__ import annotations

import warnings
from collections.abc import Iterable
from typing import Any

import kmock

from smoothscale.contract import shared_names as contract
from smoothscale.resource.crd import build_crd

from .api import ExtendedEmulator
from .scale import ScalePaths
from .store import NAMESPACES

ALL_VERBS = {"create", "delete", "deletecollection", "get", "list", "patch", "update", "watch"}

STREAMSAPPS = kmock.resource(group=contract.GROUP, version=contract.VERSION, plural=contract.PLURAL)
CLUSTER_KOPF_PEERINGS = kmock.resource(group="kopf.dev", version="v1", plural="clusterkopfpeerings")
KOPF_PEERINGS = kmock.resource(group="kopf.dev", version="v1", plural="kopfpeerings")
KEDA_SCALED_OBJECTS = kmock.resource(group="keda.sh", version="v1alpha1", plural="scaledobjects")


def register_streamsapp(emulator: ExtendedEmulator) -> None:
    """The StreamsApp kind (Contract 2): namespaced, short name `sapp`, status and scale subresources, and
    its CRD's printer columns and schema (for `kubectl get` and `kubectl explain`)."""
    emulator.resources[STREAMSAPPS] = kmock.ResourceInfo(
        kind="StreamsApp",
        singular="streamsapp",
        namespaced=True,
        verbs=ALL_VERBS,
        shortnames={"sapp"},
        categories={"all"},
        subresources={"status", "scale"},
    )
    emulator.scale_paths[STREAMSAPPS] = ScalePaths(
        spec_replicas=".spec.replicas", status_replicas=".status.replicas", label_selector=".status.selector"
    )
    (version,) = build_crd()["spec"]["versions"]
    emulator.printer_columns[STREAMSAPPS] = version["additionalPrinterColumns"]
    emulator.schemas[STREAMSAPPS] = version["schema"]["openAPIV3Schema"]


def register_builtins(emulator: ExtendedEmulator) -> None:
    """kmock's bundled discovery of a recent K3s: pods, nodes, configmaps, PVCs, events (core and
    events.k8s.io), leases, namespaces and the rest of the built-in kinds."""
    with warnings.catch_warnings():  # kmock 0.8 reads its bundle with a deprecated importlib API
        warnings.simplefilter("ignore", DeprecationWarning)
        emulator.resources.load_bundled()


def register_kopf_peering(emulator: ExtendedEmulator) -> None:
    """kopf's peering kinds, for operators run without `--standalone` (kopf then coordinates through them)."""
    emulator.resources[CLUSTER_KOPF_PEERINGS] = kmock.ResourceInfo(
        kind="ClusterKopfPeering", singular="clusterkopfpeering", namespaced=False, verbs=ALL_VERBS
    )
    emulator.resources[KOPF_PEERINGS] = kmock.ResourceInfo(
        kind="KopfPeering", singular="kopfpeering", namespaced=True, verbs=ALL_VERBS
    )


def register_keda(emulator: ExtendedEmulator) -> None:
    """KEDA's ScaledObject kind, as a cluster with KEDA installed serves it: an autoscaler the operator's
    `spec.autoscaling.mode: Act` refuses to run beside when it targets the same app."""
    emulator.resources[KEDA_SCALED_OBJECTS] = kmock.ResourceInfo(
        kind="ScaledObject", singular="scaledobject", namespaced=True, verbs=ALL_VERBS, shortnames={"so"}
    )


def build_emulator(
    *,
    peering: bool = False,
    namespaces: Iterable[str] = ("default", "kube-system"),
    **options: Any,
) -> ExtendedEmulator:
    """An emulator with the built-in kinds, `StreamsApp`, KEDA's `ScaledObject`, and the given namespaces
    already created.

    `options` go to `ExtendedEmulator` (e.g. `bookmark_interval=0.5` in tests that wait for bookmarks).
    """
    emulator = ExtendedEmulator(**options)
    register_builtins(emulator)
    register_streamsapp(emulator)
    register_keda(emulator)
    if peering:
        register_kopf_peering(emulator)
    for name in namespaces:
        emulator.create_object(NAMESPACES, {"metadata": {"name": name}})
    return emulator
