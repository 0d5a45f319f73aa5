"""The broker's jars: Apache Kafka from Maven Central, copied once into a user-level cache.

The artifacts are named in `pom.xml` beside this module (the project's one pin of Kafka's version). Maven
resolves them through `~/.m2`, then `dependency:copy-dependencies` lays them out in one folder per version,
`~/.cache/smoothscale/kafka-<version>/libs` (or under `$SMOOTHSCALE_CACHE`). A `complete` marker written last
makes a half-finished copy (an interrupted run) count as absent; a warm cache costs no Maven run at all.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Final

POM: Final = Path(__file__).with_name("pom.xml")
LOG4J_CONFIG: Final = Path(__file__).with_name("log4j2.xml")
CACHE_ENV: Final = "SMOOTHSCALE_CACHE"
_MAVEN_NS: Final = {"m": "http://maven.apache.org/POM/4.0.0"}
_MARKER: Final = "complete"


class KafkaInstallError(RuntimeError):
    """Maven could not provide the broker's jars (it names what failed)."""


def kafka_version(pom: Path = POM) -> str:
    """The `kafka.version` property of the pom."""
    element = ET.parse(pom).getroot().find("m:properties/m:kafka.version", _MAVEN_NS)
    if element is None or not (element.text or "").strip():
        raise KafkaInstallError(f"{pom} has no <properties><kafka.version>")
    return (element.text or "").strip()


def cache_root() -> Path:
    """`$SMOOTHSCALE_CACHE`, else `~/.cache/smoothscale`."""
    configured = os.environ.get(CACHE_ENV)
    return Path(configured) if configured else Path.home() / ".cache" / "smoothscale"


def libs_dir(root: Path | None = None) -> Path:
    """Where this version's jars live once installed."""
    return (root or cache_root()) / f"kafka-{kafka_version()}" / "libs"


def installed(root: Path | None = None) -> Path | None:
    """The jar folder if a complete copy is there, else None."""
    libs = libs_dir(root)
    return libs if (libs / _MARKER).is_file() else None


def install(root: Path | None = None) -> Path:
    """The jar folder, filled by Maven first if needed. Safe when two processes install at once: each copies
    into a folder of its own and the first rename wins."""
    done = installed(root)
    if done is not None:
        return done
    libs = libs_dir(root)
    libs.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix="libs-", dir=libs.parent))
    try:
        _copy_dependencies(staging)
        (staging / _MARKER).write_text(kafka_version() + "\n")
        if libs.exists() and installed(root) is None:
            shutil.rmtree(libs)  # an older, incomplete attempt
        try:
            staging.rename(libs)
        except OSError:
            if installed(root) is None:
                raise
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return libs


def classpath(libs: Path) -> str:
    """Every jar of the folder, as a Java class path."""
    jars = sorted(libs.glob("*.jar"))
    if not jars:
        raise KafkaInstallError(f"no jars in {libs}")
    return os.pathsep.join(str(jar) for jar in jars)


def disk_bytes(libs: Path) -> int:
    """What the jars take on disk."""
    return sum(jar.stat().st_size for jar in libs.glob("*.jar"))


def _copy_dependencies(target: Path) -> None:
    mvn = shutil.which("mvn")
    if mvn is None:
        raise KafkaInstallError("Maven (mvn) is not on the PATH: it fetches Kafka's jars from Maven Central")
    command = [
        mvn,
        "--batch-mode",
        "--quiet",
        "--file",
        str(POM),
        "dependency:copy-dependencies",
        "-DincludeScope=runtime",
        f"-DoutputDirectory={target}",
    ]
    result = subprocess.run(command, capture_output=True, text=True, check=False, timeout=900)
    if result.returncode != 0:
        output = (result.stdout + result.stderr).strip()[-2000:]
        raise KafkaInstallError(f"mvn dependency:copy-dependencies failed ({result.returncode}):\n{output}")
