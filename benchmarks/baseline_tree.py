"""A reference commit's copy of one of the package's folders, for the benchmarks' same-run A/B mode
(`--baseline <git-ref>`): a worker process whose PYTHONPATH starts with the returned folder imports that
commit's `smoothscale.<package>` instead of the checkout's, while the rest comes from the checkout."""

from __future__ import annotations

import io
import json
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path

REPOSITORY = Path(__file__).resolve().parent.parent


def baseline_tree(ref: str, package: str, sentinel: str) -> tuple[str, Path]:
    """The commit `ref` names and a folder whose `smoothscale/<package>` is that commit's `<package>/`.

    Extracted once per commit under `.cache/<package>-baseline/` (ignored by git); an existing tree (one
    holding `sentinel`, a file of the package) is reused. Exits with a clear message if `ref` names no
    commit.
    """
    found = subprocess.run(
        ["git", "rev-parse", "--verify", "--quiet", f"{ref}^{{commit}}"],
        check=False,
        cwd=REPOSITORY,
        capture_output=True,
        text=True,
    )
    if found.returncode != 0:
        sys.exit(f"--baseline {ref}: not a commit of the repository at {REPOSITORY}")
    sha = found.stdout.strip()
    root = REPOSITORY / ".cache" / f"{package}-baseline" / sha
    if not (root / "smoothscale" / package / sentinel).is_file():
        prefix = f"--prefix=smoothscale/{package}/"
        archive = subprocess.run(
            ["git", "archive", "--format=tar", prefix, _package_tree(sha, package)],
            cwd=REPOSITORY,
            capture_output=True,
            check=True,
        ).stdout
        root.parent.mkdir(parents=True, exist_ok=True)
        staging = Path(tempfile.mkdtemp(dir=root.parent))
        with tarfile.open(fileobj=io.BytesIO(archive)) as tar:
            tar.extractall(staging, filter="data")
        # A package folder of the layout before src/ could lack its __init__.py (`operator/` did): as a
        # namespace portion it would lose to the checkout's regular package of the same name.
        (staging / "smoothscale" / package / "__init__.py").touch()
        try:
            staging.rename(root)
        except OSError:  # another run extracted the same commit meanwhile: use its tree
            shutil.rmtree(staging)
            if not root.is_dir():
                raise
    return sha, root


def _package_tree(sha: str, package: str) -> str:
    """The tree of `package` in commit `sha`: under src/smoothscale/ since the layout moved there, at the
    repository's root before."""
    for path in (f"src/smoothscale/{package}", package):
        found = subprocess.run(
            ["git", "cat-file", "-e", f"{sha}:{path}"], cwd=REPOSITORY, capture_output=True, check=False
        )
        if found.returncode == 0:
            return f"{sha}:{path}"
    sys.exit(f"--baseline {sha}: the commit has no {package} package")


def worker_environment(*sources: Path | None) -> dict[str, str]:
    """This process's environment, with `sources` (`baseline_tree` folders) first on PYTHONPATH if given."""
    env = dict(os.environ)
    first = [str(source) for source in sources if source is not None]
    if first:
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [*first, env.get("PYTHONPATH")]))
    return env


def check_origin(module_file: str, source: Path | None, package: str) -> str | None:
    """Why a worker's imported module (its `__file__`) is not the expected side's, or None if it is: under
    `source`'s copy of `package` for the baseline, under the checkout's `src/smoothscale/package/`
    otherwise."""
    expected = (source or REPOSITORY / "src").resolve() / "smoothscale" / package
    found = Path(module_file).resolve()
    if found.is_relative_to(expected):
        return None
    return f"the worker imported {found}, expected one under {expected}"


class SideWorker:
    """One side of an A/B: `script --worker <argument>` in a process of its own, importing `package` from
    `source` (a `baseline_tree` folder) or from the checkout (None). It announces the file of the module it
    imported as `{origin_key: path}` on its first line (checked, so that a mix-up of sides fails loudly), then
    answers each request line with one line."""

    def __init__(
        self, name: str, script: str, argument: str, source: Path | None, package: str, origin_key: str
    ) -> None:
        self.name = name
        self.process = subprocess.Popen(
            [sys.executable, script, "--worker", argument],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
            env=worker_environment(source),
        )
        wrong = check_origin(json.loads(self._line())[origin_key], source, package)
        if wrong:
            self.close()
            sys.exit(wrong)

    def ask(self, request: str) -> str:
        """Send one request line, return the worker's answer line."""
        assert self.process.stdin is not None
        self.process.stdin.write(f"{request}\n")
        self.process.stdin.flush()
        return self._line()

    def _line(self) -> str:
        assert self.process.stdout is not None
        line = self.process.stdout.readline()
        if not line:
            sys.exit(f"the {self.name} worker ended early (exit code {self.process.wait()})")
        return line

    def close(self, timeout: float = 120) -> None:
        """End the worker (its input closed), killing it if it has not ended within `timeout` seconds."""
        if self.process.stdin is not None:
            self.process.stdin.close()
        try:
            self.process.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
