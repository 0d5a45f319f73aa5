"""The bridge of the first versioned release under a later operator (issue 34): that commit's publication
reader (`PublicationCodec` and the records it fills), compiled from its own sources and relocated onto the
shaded Jackson exactly as its jar holds it, reads what this operator writes with the fields a later release
adds, and refuses a newer contract version naming both versions. The Python side of the same rule runs in
`tests/contract/test_cross_version.py`. A JVM and javac, no broker."""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

from versions_testkit import FIRST_VERSIONED, POD, later_operator

from smoothscale.contract import shared_names as contract
from smoothscale.sandbox.kafka_streams import ROOT, bridge_jar

SOURCES = "bridge/smoothscale-streams/src/main/java/io/smoothscale/streams"
READER = ("PublicationCodec", "Publication", "PodTasks", "Revocation", "CorruptPublicationException")
SHADED_JACKSON = "io.smoothscale.streams.shaded.jackson"
"""Where the bridge's jar relocates Jackson (the shade plugin's relocation in its pom)."""
READ = """
package io.smoothscale.streams;

import java.nio.charset.StandardCharsets;
import java.util.Map;

public final class CrossVersionRead {
    public static void main(String[] args) throws Exception {
        String encoded = new String(System.in.readAllBytes(), StandardCharsets.UTF_8).strip();
        System.out.println(PublicationCodec.class.getProtectionDomain().getCodeSource().getLocation().getPath());
        try {
            Publication publication = PublicationCodec.fromConfigMap(Map.of(PublicationCodec.GENERATION_KEY,
                args[1]), Map.of(PublicationCodec.ASSIGNMENT_KEY, encoded));
            PodTasks tasks = publication.tasksOf(args[0]);
            System.out.println("followed " + publication.generation() + " " + tasks.active() + " "
                + tasks.standby() + " " + tasks.warmup());
        } catch (CorruptPublicationException error) {
            System.out.println("refused " + error.getMessage());
        }
    }
}
"""


def _first_versioned_reader(out: Path) -> Path:
    """That commit's reader, compiled into `out` against this checkout's shaded jar (its Jackson)."""
    sources = out / "src"
    sources.mkdir()
    for name in READER:
        text = subprocess.run(
            ["git", "show", f"{FIRST_VERSIONED}:{SOURCES}/{name}.java"],
            cwd=ROOT,
            capture_output=True,
            text=True,
            check=True,
        ).stdout
        (sources / f"{name}.java").write_text(text.replace("com.fasterxml.jackson", SHADED_JACKSON))
    (sources / "CrossVersionRead.java").write_text(READ)
    classes = out / "classes"
    subprocess.run(
        ["javac", "-nowarn", "-cp", str(bridge_jar()), "-d", str(classes), *map(str, sources.glob("*.java"))],
        check=True,
        capture_output=True,
        timeout=120,
    )
    return classes


def _read(classes: Path, configmap: dict[str, Any]) -> str:
    done = subprocess.run(
        [
            "java",
            "-cp",
            f"{classes}:{bridge_jar()}",
            "io.smoothscale.streams.CrossVersionRead",
            POD,
            configmap["data"][contract.GENERATION_KEY],
        ],
        input=configmap["binaryData"][contract.ASSIGNMENT_KEY],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    origin, answer = done.stdout.strip().splitlines()[-2:]
    assert Path(origin).resolve() == classes.resolve(), f"the reader came from {origin}, not that commit's"
    return answer


def test_the_first_versioned_bridge_follows_a_later_operator_and_refuses_a_newer_contract(
    tmp_path: Path,
) -> None:
    classes = _first_versioned_reader(tmp_path)

    assert _read(classes, later_operator({"placementHints": {POD: "zone-a"}})) == (
        "followed 3 [0_1] [0_0] [0_2]"
    )
    refused = _read(classes, later_operator({"version": 2}))
    assert refused.startswith("refused "), refused
    assert "contract version 2" in refused and "versions up to 1" in refused, refused
    assert "upgrade the smoothscale-streams bridge" in refused, refused
