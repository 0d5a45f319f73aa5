"""An in-memory Kubernetes API server for tests and the demo: kmock's emulator, extended.

Start one and get a kubeconfig::

    async with serve_emulator() as running:          # in an event loop
        running.url, running.kubeconfig, running.emulator

    with EmulatorThread() as running:                # from synchronous code (kubernetes client, KopfRunner)
        ...

or from a shell: `python -m smoothscale.sandbox.emulator --port 8001 --kubeconfig /tmp/kubeconfig`.
"""

from .api import ExtendedEmulator
from .faults import Fault, FaultInjector
from .registry import (
    CLUSTER_KOPF_PEERINGS,
    KOPF_PEERINGS,
    STREAMSAPPS,
    build_emulator,
    register_builtins,
    register_kopf_peering,
    register_streamsapp,
)
from .scale import ScalePaths
from .selectors import FieldSelector, LabelSelector
from .server import EmulatorThread, RunningEmulator, serve_emulator, write_kubeconfig

__all__ = [
    "CLUSTER_KOPF_PEERINGS",
    "KOPF_PEERINGS",
    "STREAMSAPPS",
    "EmulatorThread",
    "ExtendedEmulator",
    "Fault",
    "FaultInjector",
    "FieldSelector",
    "LabelSelector",
    "RunningEmulator",
    "ScalePaths",
    "build_emulator",
    "register_builtins",
    "register_kopf_peering",
    "register_streamsapp",
    "serve_emulator",
    "write_kubeconfig",
]
