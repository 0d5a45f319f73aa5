"""A user's own Kafka Streams app as every pod's process (`smoothscale demo --kafka --app-jar ...`).

The jars go on the class path in the order given; the bridge's jar (`smoothscale-streams`) is added last when
none of them holds it, so that an app can be tried before it takes the dependency. With a main class the JVM
runs it from that class path; without one the first jar runs with `java -jar`, as its own manifest says
(`Main-Class`, `Class-Path`). `java -jar` ignores any other class path, so when more than the first jar
must be on it (jars after the first, or the bridge's), the first jar's `Main-Class` runs from the class
path instead: the JVM follows the jars' `Class-Path` entries there too.

A Spring Boot jar loads its own classes and libraries (`BOOT-INF/`) in a class loader of its own, below the
class path's: the bridge's classes on the class path could not see Kafka's inside it. Such a jar must hold
the bridge (`io.smoothscale:smoothscale-streams` among its dependencies): `AppProcess.check` says so instead
of starting pods that would fail.
"""

from __future__ import annotations

import os
import zipfile
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

BRIDGE_CLASS = "io/smoothscale/streams/SmoothscaleMetricsReporter.class"
"""The class a jar holds when the bridge is in it (the bridge's own jar, or one that shades it)."""
BRIDGE_ARTIFACT = "smoothscale-streams-"
"""The start of the bridge's jar's name, as a fat jar nests it (Spring Boot's `BOOT-INF/lib/`)."""


class AppJarError(ValueError):
    """A jar that cannot run as the demo's pods: which one, why, and what to do."""


@dataclass(frozen=True)
class AppProcess:
    """The user's app: its jars in class-path order and, optionally, its main class."""

    jars: tuple[Path, ...]
    main_class: str | None = None

    def check(self) -> None:
        """Raise `AppJarError` when the pods could not start as asked (unreadable jar, no main class, a
        Spring Boot jar without the bridge)."""
        if not self.jars:
            raise AppJarError("--app-jar: give at least one jar")
        for jar in self.jars:
            _entries(jar)
        if self.main_class is None and main_class_of(self.jars[0]) is None:
            raise AppJarError(
                f"{self.jars[0]}: its manifest names no Main-Class; give the app's main class with --app-main"
            )
        if self._needs_bridge() and any(_is_spring_boot(jar) for jar in self.jars):
            spring = next(jar for jar in self.jars if _is_spring_boot(jar))
            raise AppJarError(
                f"{spring}: a Spring Boot jar without the bridge (no {BRIDGE_ARTIFACT}*.jar in "
                "BOOT-INF/lib): its libraries load in a class loader of their own, where the bridge's jar "
                "added on the class path cannot see Kafka; add the dependency "
                "io.smoothscale:smoothscale-streams to the app and build it again"
            )

    def argv(self, java: Sequence[str], bridge_jar: Callable[[], Path]) -> list[str]:
        """The pod's command line after the JVM's own options `java` (`java -Xmx...`, no `-jar`);
        `bridge_jar` is called only when the bridge must be added."""
        class_path = [*self.jars, *([bridge_jar()] if self._needs_bridge() else [])]
        if self.main_class is None and len(class_path) == 1:
            return [*java, "-jar", str(class_path[0])]
        main = self.main_class or main_class_of(self.jars[0])
        if main is None:
            raise AppJarError(f"{self.jars[0]}: no Main-Class in its manifest; use --app-main")
        return [*java, "-cp", os.pathsep.join(str(jar) for jar in class_path), main]

    def _needs_bridge(self) -> bool:
        return not any(holds_bridge(jar) for jar in self.jars)


def holds_bridge(jar: Path) -> bool:
    """Whether the bridge is in `jar`: its classes, or its jar nested in a fat jar."""
    return any(
        name == BRIDGE_CLASS
        or (name.rsplit("/", 1)[-1].startswith(BRIDGE_ARTIFACT) and name.endswith(".jar"))
        for name in _entries(jar)
    )


def main_class_of(jar: Path) -> str | None:
    """The `Main-Class` of the jar's manifest, if any."""
    try:
        with zipfile.ZipFile(jar) as archive:
            manifest = archive.read("META-INF/MANIFEST.MF").decode("utf-8", errors="replace")
    except KeyError:
        return None
    except (OSError, zipfile.BadZipFile) as error:
        raise AppJarError(f"{jar}: not a readable jar ({error})") from error
    for line in manifest.splitlines():
        name, _, value = line.partition(":")
        if name.strip() == "Main-Class" and value.strip():
            return value.strip()
    return None


def _is_spring_boot(jar: Path) -> bool:
    return any(name.startswith("BOOT-INF/") for name in _entries(jar))


def _entries(jar: Path) -> list[str]:
    try:
        with zipfile.ZipFile(jar) as archive:
            return archive.namelist()
    except (OSError, zipfile.BadZipFile) as error:
        raise AppJarError(f"{jar}: not a readable jar ({error})") from error
