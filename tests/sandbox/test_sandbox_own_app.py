"""`smoothscale demo --kafka --app-jar`: how the user's jars become each pod's command line, how its inputs
and environment are read, and how a step is judged from snapshots when the pods write no records."""

from __future__ import annotations

import zipfile
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from smoothscale.cli.main import cli
from smoothscale.sandbox import demo_main
from smoothscale.sandbox.app_process import AppJarError, AppProcess, holds_bridge
from smoothscale.sandbox.demo import StepResult
from smoothscale.sandbox.demo_kafka import InputTopic, own_streams_app
from smoothscale.sandbox.kafka_streams import KafkaStreamsCommand
from smoothscale.sandbox.observe import PodView, Snapshot, processing_intervals
from smoothscale.sandbox.podruntime import Launch
from smoothscale.sandbox.podspec import AppSettings
from smoothscale.sandbox.records import handovers
from smoothscale.sandbox.report import step_failures, step_figures
from smoothscale.sandbox.streams_app import fallbacks_after_first_plan

JAVA = ["java", "-Xmx384m"]


def _jar(path: Path, *entries: str, main: str | None = None) -> Path:
    with zipfile.ZipFile(path, "w") as jar:
        manifest = "Manifest-Version: 1.0\n" + (f"Main-Class: {main}\n" if main else "")
        jar.writestr("META-INF/MANIFEST.MF", manifest)
        for entry in entries:
            jar.writestr(entry, b"")
    return path


def _bridge() -> Path:
    return Path("/bridge/smoothscale-streams-0.1.0.jar")


def test_a_jar_holding_the_bridge_runs_alone_with_java_jar(tmp_path: Path) -> None:
    boot = _jar(
        tmp_path / "boot.jar",
        "BOOT-INF/lib/smoothscale-streams-0.1.0.jar",
        main="org.springframework.boot.loader.launch.JarLauncher",
    )
    assert holds_bridge(boot)
    app = AppProcess((boot,))
    app.check()
    assert app.argv(JAVA, lambda: pytest.fail("the bridge is not needed")) == [*JAVA, "-jar", str(boot)]


def test_the_bridge_is_added_after_the_apps_jars_and_the_main_class_runs_from_the_class_path(
    tmp_path: Path,
) -> None:
    app_jar = _jar(tmp_path / "app.jar", "com/example/App.class", main="com/example.App")
    lib = _jar(tmp_path / "lib.jar", "com/example/Lib.class")
    assert not holds_bridge(app_jar)
    # Without --app-main, the first jar's Main-Class: java -jar would ignore the rest of the class path.
    assert AppProcess((app_jar, lib)).argv(JAVA, _bridge) == [
        *JAVA,
        "-cp",
        f"{app_jar}:{lib}:{_bridge()}",
        "com/example.App",
    ]
    assert AppProcess((app_jar,), "com.example.Other").argv(JAVA, _bridge)[-2:] == [
        f"{app_jar}:{_bridge()}",
        "com.example.Other",
    ]
    shaded = _jar(tmp_path / "shaded.jar", "io/smoothscale/streams/SmoothscaleMetricsReporter.class")
    assert AppProcess((app_jar, shaded), "com.example.App").argv(JAVA, _bridge)[-2] == f"{app_jar}:{shaded}"


def test_the_apps_arguments_are_the_containers_args_expanded_as_a_kubelet_does(tmp_path: Path) -> None:
    app_jar = _jar(tmp_path / "app.jar", "io/smoothscale/streams/SmoothscaleMetricsReporter.class", main="A")
    pod_name = {"name": "SMOOTHSCALE_POD_NAME", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}}
    container = {
        "name": "app",
        "env": [pod_name, {"name": "CLIENT", "value": "$(SMOOTHSCALE_POD_NAME)-c"}],
        "args": ["--state=$(SMOOTHSCALE_STATE_DIR)", "--id=$(CLIENT)", "$$(CLIENT)", "$(UNKNOWN)"],
    }
    pod = {
        "metadata": {"name": "orders-1", "namespace": "shop", "labels": {}},
        "spec": {"containers": [container]},
    }
    state = tmp_path / "state"
    launch = Launch(pod, AppSettings(), "127.0.0.5", state, tmp_path / "log")
    streams = KafkaStreamsCommand(tmp_path / "kubeconfig", "127.0.0.1:9092", app=AppProcess((app_jar,)))
    command = streams(launch)
    assert command.argv[-4:] == [f"--state={state}", "--id=orders-1-c", "$(CLIENT)", "$(UNKNOWN)"]
    assert command.argv[-6:-4] == ["-jar", str(app_jar)]


def test_jars_that_cannot_run_are_refused_with_what_to_do(tmp_path: Path) -> None:
    no_main = _jar(tmp_path / "lib.jar", "com/example/Lib.class")
    with pytest.raises(AppJarError, match="names no Main-Class; give the app's main class with --app-main"):
        AppProcess((no_main,)).check()
    AppProcess((no_main,), "com.example.Main").check()
    boot = _jar(tmp_path / "boot.jar", "BOOT-INF/lib/kafka-streams-4.1.2.jar", main="Launcher")
    with pytest.raises(AppJarError, match=r"add the dependency io\.smoothscale:smoothscale-streams"):
        AppProcess((boot,)).check()
    text = tmp_path / "notes.txt"
    text.write_text("not a jar")
    with pytest.raises(AppJarError, match=r"notes\.txt: not a readable jar"):
        AppProcess((text,)).check()


def test_inputs_are_topic_partitions_and_an_optional_rate() -> None:
    assert InputTopic.parse("orders:6") == InputTopic("orders", 6, 10)
    assert InputTopic.parse("clicks:3:50") == InputTopic("clicks", 3, 50)
    for bad in ("orders", "orders:six", "orders:0", ":3", "a:1:2:3", "orders:2:-1"):
        with pytest.raises(ValueError, match=r"orders|PARTITIONS|RECORDS_PER_S|TOPIC"):
            InputTopic.parse(bad)


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--app-jar", "{jar}"], "--app-jar needs --kafka"),
        (["--kafka", "--app-main", "x.Main"], "--app-main needs --app-jar"),
        (["--kafka", "--input", "orders:3"], "--input needs --app-jar"),
        (["--kafka", "--app-env", "A=1"], "--app-env needs --app-jar"),
        (["--kafka", "--app-jar", "{jar}", "--input", "orders"], "Invalid value for '--input'"),
        (["--kafka", "--app-jar", "{jar}", "--app-env", "NOEQUALS"], "Invalid value for '--app-env'"),
        (["--kafka", "--app-jar", "{jar}", "--input", "a:1", "--input", "a:2"], "a topic is given twice"),
        (["--kafka", "--app-jar", "{lib}"], "Invalid value for '--app-jar'"),
        (["--kafka", "--app-jar", "{tmp}/missing.jar"], "does not exist"),
        (["--group-protocol", "streams"], "--group-protocol streams runs the app on real brokers"),
        (["--kafka", "--app-name", "shop"], "--app-name needs --app-jar"),
        (["--history", "1000"], "--history fills the sample app's changelogs"),
        (
            ["--kafka", "--app-jar", "{jar}", "--history", "1000"],
            "--history fills the sample app's changelogs",
        ),
        (["--kafka", "--history", "-1"], "Invalid value for '--history'"),
        (["--kafka", "--app-jar", "{jar}", "--app-name", "Shop_1"], "Invalid value for '--app-name'"),
        (["--kafka", "--app-jar", "{jar}", "--app-name", "shop-"], "ending with a letter or digit"),
        (["--kafka", "--app-jar", "{jar}", "--app-name", "a" * 51], "at most 50 characters"),
        (
            ["--kafka", "--group-protocol", "streams", "--app-jar", "{jar}", "--app-name", "a" * 28],
            "at most 27 characters on the streams protocol",
        ),
    ],
)
def test_bad_arguments_name_the_option_and_start_nothing(
    tmp_path: Path, args: list[str], message: str
) -> None:
    jar = _jar(tmp_path / "app.jar", "BOOT-INF/lib/smoothscale-streams-0.1.0.jar", main="Launcher")
    lib = _jar(tmp_path / "lib.jar", "com/example/Lib.class")
    filled = [arg.format(jar=jar, lib=lib, tmp=tmp_path) for arg in args]
    result = CliRunner().invoke(cli, ["demo", "--output-dir", str(tmp_path / "out"), *filled])
    assert result.exit_code == 2, result.output
    assert message in result.output
    assert not (tmp_path / "out").exists()


def test_a_named_app_jar_runs_under_either_protocol(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """`--app-name` names the StreamsApp (its pods, its group); `--group-protocol streams` takes the user's
    jar too. The demo itself is replaced: what it is asked to run is checked."""
    asked: list[dict[str, Any]] = []
    monkeypatch.setattr(demo_main, "run_demo", lambda *_, **options: asked.append(options) or 0)
    jar = _jar(tmp_path / "app.jar", "BOOT-INF/lib/smoothscale-streams-0.1.0.jar", main="Launcher")
    for protocol in ("classic", "streams"):
        args = [
            "demo",
            "--kafka",
            "--group-protocol",
            protocol,
            "--app-jar",
            str(jar),
            "--app-name",
            "shop-2",
        ]
        result = CliRunner().invoke(cli, [*args, "--app-env", "ID=$(SMOOTHSCALE_POD_NAME)"])
        assert result.exit_code == 0, result.output
    assert [(options["own_app"].name, options["streams_protocol"]) for options in asked] == [
        ("shop-2", False),
        ("shop-2", True),
    ]
    own = asked[0]["own_app"]
    assert own.env == {"ID": "$(SMOOTHSCALE_POD_NAME)"}, "the pods' env is the kubelet's to expand"
    app = own_streams_app({"bootstrapServers": "b:9092"}, own)
    assert app["metadata"]["name"] == "shop-2" and "topology" not in app["spec"]
    assert app["spec"]["template"]["spec"]["containers"][0]["env"] == [
        {"name": "ID", "value": "$(SMOOTHSCALE_POD_NAME)"}
    ]


def _pod(name: str, *, behind: frozenset[str] = frozenset(), generation: int | None = 3) -> PodView:
    return PodView(name, "zone-a", True, False, "r1", 1, 0, 0, 0, generation, behind)


def _snapshot(
    at: float,
    planned: dict[str, set[str]],
    kafka: dict[str, set[str]] | None,
    *,
    restoring: dict[str, set[str]] | None = None,
) -> Snapshot:
    pods = tuple(_pod(name, behind=frozenset((restoring or {}).get(name, ()))) for name in planned)
    return Snapshot(
        at=at,
        step="scale-out",
        generation=3,
        revoking=0,
        pods=pods,
        replicas=len(pods),
        ready=len(pods),
        stable=True,
        migrating=False,
        next_probe=None,
        planned={pod: frozenset(tasks) for pod, tasks in planned.items()},
        kafka_view=None if kafka is None else {pod: frozenset(tasks) for pod, tasks in kafka.items()},
        kafka_read=True,
        tasks=("0_0", "0_1"),
    )


def test_a_step_settles_only_when_every_task_processes_on_its_planned_owner() -> None:
    plan = {"a-0": {"0_0"}, "a-1": {"0_1"}}
    assert _snapshot(1, plan, plan).settled
    restoring = _snapshot(1, plan, plan, restoring={"a-1": {"0_1"}})
    assert not restoring.settled
    assert restoring.processing == {"0_0": "a-0"}
    elsewhere = _snapshot(1, plan, {"a-0": {"0_0", "0_1"}, "a-1": set()})
    assert not elsewhere.settled
    assert elsewhere.plan_matches_kafka is False
    assert elsewhere.processing == {"0_0": "a-0", "0_1": "a-0"}  # Kafka has not revoked it yet
    assert _snapshot(1, plan, None).plan_matches_kafka is False  # asked, unreadable: not shown to match
    assert not _snapshot(1, {"a-0": {"0_0"}, "a-1": set()}, {"a-0": {"0_0"}}).settled  # 0_1 planned nowhere


def test_hand_overs_and_gaps_are_read_from_the_snapshots() -> None:
    before = {"a-0": {"0_0", "0_1"}, "a-1": set()}
    after = {"a-0": {"0_0"}, "a-1": {"0_1"}}
    timeline = [
        _snapshot(10.0, before, before),
        _snapshot(10.5, before, before),
        _snapshot(11.0, after, before),  # planned on a-1: a-0 processes it until Kafka revokes it
        _snapshot(11.5, after, after, restoring={"a-1": {"0_1"}}),
        _snapshot(12.0, after, after),
    ]
    intervals = processing_intervals(timeline)
    moved = handovers(intervals, 10.0, 12.0)
    assert [(h.task, h.source_pod, h.target_pod, h.gap) for h in moved] == [("0_1", "a-0", "a-1", 1.0)]
    assert [(i.task, i.pod, i.start, i.end) for i in intervals] == [
        ("0_0", "a-0", 10.0, 12.0),
        ("0_1", "a-0", 10.0, 11.0),
        ("0_1", "a-1", 12.0, 12.0),
    ]


def test_a_step_with_a_fallback_or_not_following_the_plan_fails_and_says_why() -> None:
    result = StepResult("pod-crash", "kill one", started=0.0, settled=12.5, handover_gaps=[1.0, 2.0, 4.0])
    result.fallbacks, result.failovers = {"unknown_client": 2}, 1
    result.plan_matches_kafka = True
    result.balanced = True
    assert step_figures(result) == {
        "settled_s": 12.5,
        "moved": 3,
        "handover_p50_s": 2.0,
        "handover_max_s": 4.0,
        "fallbacks": 2,
        "fallback_reasons": {"unknown_client": 2},
        "failovers": 1,
        "rebalances_before_first_plan": 0,
        "plan_matches_kafka": True,
        "balanced": True,
        "violations": [],
        "migrations": [],
    }
    assert step_failures(result) == ["the bridge fell back (unknown_client x2)"]
    result.fallbacks = {}
    assert step_failures(result) == [], "a crashed pod's actives failing over to their standbys is no failure"
    result.fallbacks, result.plan_matches_kafka, result.balanced = {}, False, False
    assert step_failures(result) == ["ended unbalanced", "Kafka's view of the group is not the plan"]


def test_the_bridges_fallbacks_are_read_from_every_pods_log_after_the_first_plan(tmp_path: Path) -> None:
    """The walk's check that the bridge never fell back: before any pod led a rebalance with the operator's
    plan, `no_publication` is every app's start; after it, any fallback counts, in any pod's log (a
    restarted pod writes a new file) and in either log layout (the plain app's log4j, Spring Boot's)."""
    logs = tmp_path / "logs"
    logs.mkdir()
    fell_back = "WARN Not following the operator's plan as published"
    (logs / "default.app-0.a.log").write_text(
        f"[2026-11-26 17:41:21,448] {fell_back} (no_publication): nothing published yet\n"
        "[2026-11-26 17:41:24,422] INFO Assigning generation 1 of the operator's plan to 3 clients\n"
        "a line without a time stamp\n"
    )
    (logs / "default.app-1.b.log").write_text(
        f"2026-11-26T17:41:22.693Z  {fell_back} (no_publication): no publication read yet\n"
    )
    assert fallbacks_after_first_plan(logs) == []
    late = f"2026-11-26T17:45:02.001Z  {fell_back} (unmapped_client): clients [a, b] all name pod app-1"
    (logs / "default.app-1.c.log").write_text(late + "\n")
    assert fallbacks_after_first_plan(logs) == [late]
