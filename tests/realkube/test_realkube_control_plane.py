"""The launcher itself: whatever happens, every process it started is stopped; a clear error otherwise."""

from __future__ import annotations

from pathlib import Path

import pytest
from realkube_kit import built_binaries, sibling_kit

from smoothscale.sandbox.control_plane import Binaries, ControlPlane, ControlPlaneError

e2e = sibling_kit("sandbox_e2e", "sandbox_e2e_kit")


def test_a_failing_block_still_stops_every_component(tmp_path: Path) -> None:
    with (
        pytest.raises(RuntimeError, match="a test failing"),
        ControlPlane(tmp_path, Binaries.from_folder(built_binaries())),
    ):
        assert len(e2e.processes_using(tmp_path)) == 3  # etcd, kube-apiserver, kube-controller-manager
        raise RuntimeError("a test failing")
    assert e2e.processes_using(tmp_path) == []


def test_a_component_that_cannot_start_is_reported_and_the_others_stopped(tmp_path: Path) -> None:
    plane = ControlPlane(
        tmp_path,
        Binaries.from_folder(built_binaries()),
        controllers=("serviceaccount-controller", "no-such-controller"),
    )
    with pytest.raises(ControlPlaneError, match="kube-controller-manager exited") as error, plane:
        pass
    assert "no-such-controller" in str(error.value)  # the end of its log says why
    assert e2e.processes_using(tmp_path) == []


def test_missing_binaries_are_named_with_the_way_to_build_them(tmp_path: Path) -> None:
    (tmp_path / "etcd").write_text("#!/bin/sh\n")
    (tmp_path / "etcd").chmod(0o755)
    expected = (
        "no executable kube-apiserver, kube-controller-manager, kubectl; build them with tools/kube/build.sh"
    )
    with pytest.raises(FileNotFoundError, match=expected):
        Binaries.from_folder(tmp_path)
