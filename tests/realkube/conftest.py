"""Fixtures of the real-API-server suite: one control plane for the whole session, a namespace per test.

The control plane (etcd, kube-apiserver, kube-controller-manager, `smoothscale.sandbox.control_plane`) is
built from the Go module proxy by `tools/kube/build.sh` on first use (cached per user, keyed by the pinned
release: a warm machine rebuilds nothing) and started once: starting takes seconds, a test's namespace
keeps its objects apart from the others'. Test modules here are named `test_realkube_*` (the folder is
not a package).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import kubernetes
import pytest
from realkube_kit import Cluster, apply_crd, built_binaries

from smoothscale.sandbox.control_plane import Binaries, ControlPlane, RunningControlPlane


@pytest.fixture(scope="session")
def control_plane(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningControlPlane]:
    root = tmp_path_factory.mktemp("control-plane")
    with ControlPlane(root, Binaries.from_folder(built_binaries())) as running:
        apply_crd(running)
        yield running


@pytest.fixture()
def cluster(control_plane: RunningControlPlane, request: pytest.FixtureRequest) -> Iterator[Cluster]:
    """The control plane, an administrator's client, and a fresh namespace deleted after the test."""
    with kubernetes.config.new_client_from_config(config_file=str(control_plane.kubeconfig)) as api:
        found = Cluster(control_plane, api, Cluster.namespace_for(request.node.name))
        found.create_namespace()
        try:
            yield found
        finally:
            found.delete_namespace()


@pytest.fixture()
def workdir(tmp_path: Path) -> Path:
    return tmp_path
