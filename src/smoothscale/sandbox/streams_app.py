"""The Java sample app as a StreamsApp under the operator in the sandbox (`spec.runtime: KafkaStreams`): its
resource, waiting until it has settled, and crashing one of its pods. Shared by the operator-driven bridge
test and the Kafka Streams chaos benchmark (`benchmarks/streams_chaos.py`).
"""

from __future__ import annotations

import re
import subprocess
import time
import urllib.request
from collections import Counter
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from confluent_kafka import KafkaException
from prometheus_client.parser import text_string_to_metric_families

from smoothscale.contract import shared_names as contract
from smoothscale.contract import streams_protocol
from smoothscale.contract.publication import ClientAssignment, Publication
from smoothscale.control import object_names

from .harness import Sandbox
from .kafka_streams import SampleApp, describe_streams_group
from .observe import generation_observed, spec_generation


def streams_app(
    app: str,
    orders: str,
    totals: str,
    replicas: int,
    *,
    acceptable_lag: int,
    session_timeout_ms: int | None = 10_000,
    adoption: str = "code",
    streams_protocol: str | None = None,
) -> dict[str, Any]:
    """The sample app as a StreamsApp with no spec.topology: the bridge reports it (subtopology 0 reads the
    orders, 1 the repartition topic). A killed instance's member leaves the group after
    `session_timeout_ms`, not Kafka Streams' 45 s (None: the app's own). `adoption="properties"` runs the
    sample that adopts smoothscale by its settings alone (`PlainOrdersApp`), "code" the one calling
    `SmoothscaleBridge`.

    `streams_protocol` (the brokers' bootstrap servers): the app runs `group.protocol=streams` without the
    bridge, tagged with its app and pod for smoothscale's broker plugin, and the operator reads its group
    from those brokers (`spec.kafka.groupProtocol: streams`); the group's own settings (heartbeat, session)
    are group configs then, set on the brokers."""
    env: list[dict[str, Any]] = [
        {"name": "ORDERS_TOPIC", "value": orders},
        {"name": "TOTALS_TOPIC", "value": totals},
    ]
    if streams_protocol is None:
        if session_timeout_ms is not None:
            env.append({"name": "STREAMS_SESSION_TIMEOUT_MS", "value": str(session_timeout_ms)})
        if adoption == "properties":
            env.append({"name": "SMOOTHSCALE_BRIDGE", "value": "properties"})
    else:
        env += streams_protocol_env(app)
    body: dict[str, Any] = {
        "apiVersion": contract.API_VERSION,
        "kind": contract.KIND,
        "metadata": {"name": app, "namespace": "default"},
        "spec": {
            "replicas": replicas,
            "runtime": "KafkaStreams",
            "template": {"spec": {"containers": [{"name": "app", "image": "orders:1", "env": env}]}},
            "assignment": {"probingInterval": "10s", "acceptableRecoveryLag": acceptable_lag},
            "scaling": {"scaleDownTimeout": "3m"},
            "metrics": {"port": 8080, "path": "/metrics"},
        },
    }
    if streams_protocol is not None:
        body["spec"]["kafka"] = streams_protocol_kafka(streams_protocol)
    return body


def streams_protocol_env(app: str) -> list[dict[str, Any]]:
    """The sample app's pod environment on the streams protocol: `group.protocol=streams`, no bridge (the
    brokers assign), its client id the pod's name and the client tags that name its app and pod for
    smoothscale's broker plugin."""
    pod_name = {"valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}}
    return [
        {"name": "SMOOTHSCALE_BRIDGE", "value": "off"},
        {"name": "STREAMS_CLIENT_ID", **pod_name},
        {"name": "STREAMS_GROUP_PROTOCOL", "value": "streams"},
        {"name": "STREAMS_CLIENT_TAG_SMOOTHSCALE_APP", "value": app},
        {"name": "STREAMS_CLIENT_TAG_SMOOTHSCALE_POD", **pod_name},
    ]


def streams_protocol_kafka(bootstrap: str) -> dict[str, Any]:
    """`spec.kafka` of an app on the streams protocol: the operator reads its group from `bootstrap` every
    second (the group view the plugin publishes) and hands its plans to the brokers there."""
    return {
        "bootstrapServers": bootstrap,
        "groupProtocol": "streams",
        "refreshInterval": "1s",
        "timeout": "5s",
    }


STREAMS_GROUP_CONFIGS = {
    "streams.heartbeat.interval.ms": "500",
    "streams.session.timeout.ms": "10000",
    "streams.task.offset.interval.ms": "1000",
}
"""Group configs (set on the brokers) for a sandbox app on the streams protocol: heartbeats every 500 ms (a
new assignment reaches the members within one), a killed instance gone from the group after 10 s (not 45),
task offsets reported every second (the operator and the plugin see warmups catch up)."""


def ready(pod: dict[str, Any]) -> bool:
    """Ready: its process follows the published assignment (it reports the generation it runs)."""
    conditions = (pod.get("status") or {}).get("conditions") or []
    return any(c.get("type") == "Ready" and c.get("status") == "True" for c in conditions)


def staying(sandbox: Sandbox, app: str) -> list[dict[str, Any]]:
    """The app's pods not being deleted, or none while a change of pods is under way: a pod marked leaving,
    or pods of two template revisions (a swap surges one pod at a time, so between its steps the app runs
    `replicas` pods, balanced and agreed, some of them old ones still to be retired)."""
    listed = [p for p in sandbox.pods(app) if not p["metadata"].get("deletionTimestamp")]
    revisions = {(p["metadata"].get("labels") or {}).get(object_names.REVISION_LABEL) for p in listed}
    leaving = any(contract.LEAVING_ANNOTATION in (p["metadata"].get("annotations") or {}) for p in listed)
    return [] if leaving or len(revisions) > 1 else listed


def settle(
    sandbox: Sandbox, kafka: SampleApp, replicas: int, tasks: int, timeout: float = 300
) -> dict[str, set[str]]:
    """Wait until the app runs `replicas` pods of one revision, all ready and none leaving, and the operator's
    published actives (all `tasks` of them) are exactly Kafka's view of the group, balanced over the pods;
    that view."""
    deadline = time.monotonic() + timeout
    seen: object = None
    wanted = spec_generation(sandbox, kafka.app)
    while time.monotonic() < deadline:
        listed = staying(sandbox, kafka.app)
        pods = {p["metadata"]["name"] for p in listed if ready(p)}
        publication = sandbox.publication(kafka.app)
        try:
            view = kafka.kafka_view()
        except (KafkaException, TimeoutError):  # the coordinator is loading, moving, or slow to answer
            view = {}
        if (
            generation_observed(sandbox, kafka.app, wanted)
            and publication is not None
            and len(pods) == len(listed) == replicas
        ):
            planned = {pod: set(roles.active) for pod, roles in publication.assignment.items() if pod in pods}
            counts = [len(planned.get(pod, set())) for pod in pods]
            kafka_view = {pod: tasks for pod, tasks in view.items() if tasks}
            if (
                sum(counts) == tasks
                and max(counts) - min(counts) <= 1
                and {pod: tasks for pod, tasks in planned.items() if tasks} == kafka_view
                and not publication.revoking
            ):
                return kafka_view
            seen = (sorted(pods), planned, view)
        time.sleep(1)
    raise AssertionError(f"no agreed, balanced assignment over {replicas} pods within {timeout} s: {seen}")


def kafka_runs(view: Mapping[str, Any] | None) -> dict[str, dict[str, set[str]]]:
    """Per pod: the active tasks and the copies (standbys and warmups) its members run, in Kafka's view of
    a streams group (`describe_streams_group`)."""
    pods: dict[str, dict[str, set[str]]] = {}
    for member in (view or {}).get("members", []):
        roles = pods.setdefault(member["pod"], {"active": set(), "standby": set()})
        roles["active"] |= set(member["assignment"]["active"])
        roles["standby"] |= set(member["assignment"]["standby"]) | set(member["assignment"]["warmup"])
    return pods


def planned_runs(plan: Publication) -> dict[str, dict[str, set[str]]]:
    """The same per pod, as `plan` gives it (pods given nothing left out)."""
    return {
        pod: {"active": set(roles.active), "standby": set(roles.standby) | set(roles.warmup)}
        for pod, roles in plan.assignment.items()
        if roles.active or roles.standby or roles.warmup
    }


def plan_differs(view: Mapping[str, Any] | None, plan: Publication | None) -> str | None:
    """None when Kafka's own view of a streams group (`describe_streams_group`) is `plan`: smoothscale's
    plugin its assignor, and every pod's members running exactly the pod's actives and copies; else what
    differs."""
    if view is None:
        return "Kafka describes no such group (yet)"
    if view["assignor"] != streams_protocol.ASSIGNOR_NAME:
        ours = streams_protocol.ASSIGNOR_NAME
        return f"the group's assignor is {view['assignor']}, not smoothscale's {ours}"
    runs = {pod: roles for pod, roles in kafka_runs(view).items() if roles["active"] or roles["standby"]}
    planned = {} if plan is None else planned_runs(plan)
    if runs != planned:
        return f"Kafka's view of the group {runs} is not the operator's plan {planned}"
    return None


def settle_streams_protocol(
    sandbox: Sandbox, app: str, bootstrap: str, replicas: int, tasks: int, timeout: float = 300
) -> Publication:
    """For an app on the streams protocol (KIP-1071): wait until it runs `replicas` pods of one revision, all
    ready and none leaving, and Kafka's own view of the group (`describeStreamsGroups`) is exactly the plan
    the operator published, every task active once, balanced over the pods, the plugin its assignor; that
    plan."""
    deadline = time.monotonic() + timeout
    seen: object = None
    wanted = spec_generation(sandbox, app)
    while time.monotonic() < deadline:
        listed = staying(sandbox, app)
        ready_pods = {p["metadata"]["name"] for p in listed if ready(p)}
        publication = sandbox.publication(app)
        try:
            view = describe_streams_group(bootstrap, app)
        except (RuntimeError, subprocess.TimeoutExpired):  # the coordinator is loading or moving
            view = None
        if (
            generation_observed(sandbox, app, wanted)
            and publication is not None
            and view is not None
            and len(ready_pods) == len(listed) == replicas
        ):
            counts = [len(publication.assignment.get(pod, ClientAssignment()).active) for pod in ready_pods]
            differs = plan_differs(view, publication)
            if sum(counts) == tasks and max(counts) - min(counts) <= 1 and differs is None:
                return publication
            seen = (sorted(ready_pods), counts, differs)
        time.sleep(1)
    raise AssertionError(
        f"Kafka's view never was the balanced plan over {replicas} pods in {timeout} s: {seen}"
    )


def crash(sandbox: Sandbox, pod: str, *, lose_volume: bool, timeout: float = 120) -> None:
    """SIGKILL the pod's JVM and wait until the kubelet stand-in runs a new one in the same pod."""
    kubelet = sandbox.kubelet
    assert kubelet is not None
    killed = kubelet.crash(pod, lose_volume=lose_volume)
    deadline = time.monotonic() + timeout
    while kubelet.worker_pids().get(f"default/{pod}") in (None, killed):
        assert time.monotonic() < deadline, f"{pod} was not restarted within {timeout} s"
        time.sleep(0.5)


def swap_every_pod(sandbox: Sandbox, app: str, stamp: str, timeout: float = 300) -> None:
    """Ask for a swap of every pod as `smoothscale swap` does (the template's restartedAt annotation, `stamp`)
    and wait until none of the pods running before is left. Settling alone cannot tell: the operator may take
    the new template in a round before it surges the first new pod, and until then the old pods are of one
    revision, none leaving, balanced and agreed."""
    before = {p["metadata"]["uid"] for p in sandbox.pods(app)}
    annotations = {object_names.RESTARTED_AT_ANNOTATION: stamp}
    sandbox.patch_app(app, {"spec": {"template": {"metadata": {"annotations": annotations}}}})
    deadline = time.monotonic() + timeout
    while before & {p["metadata"]["uid"] for p in sandbox.pods(app)}:
        assert time.monotonic() < deadline, f"the swap did not replace every pod of {app} within {timeout} s"
        time.sleep(1)


def assignor_counts(sandbox: Sandbox, app: str) -> Counter[str]:
    """Rebalances led (`rebalances_followed`), fail-overs (`failovers`) and fallbacks by reason
    (`fallback_<reason>`), summed over the app's pods as their metrics endpoints show them now (a restarted
    pod's counters start again)."""
    counts: Counter[str] = Counter()
    for pod in sandbox.pods(app):
        ip = (pod.get("status") or {}).get("podIP")
        if not ip:
            continue
        try:
            with urllib.request.urlopen(f"http://{ip}:8080/metrics", timeout=2) as response:
                text = response.read().decode()
        except OSError:
            continue
        for family in text_string_to_metric_families(text):
            for sample in family.samples:
                if sample.name == "smoothscale_bridge_assignor_followed_total":
                    counts["rebalances_followed"] += int(sample.value)
                elif sample.name == contract.ASSIGNOR_FALLBACKS_METRIC:
                    counts[f"fallback_{sample.labels['reason']}"] += int(sample.value)
                elif sample.name == contract.ASSIGNOR_FAILOVERS_METRIC:
                    counts["failovers"] += int(sample.value)
    return counts


_LOGGED_AT = re.compile(r"(\d{4}-\d{2}-\d{2})[ T](\d{2}:\d{2}:\d{2})[,.](\d{3})")
_FOLLOWED = "of the operator's plan to"
_FELL_BACK = "Not following the operator's plan as published"


def fallbacks_after_first_plan(logs: Path) -> list[str]:
    """The bridge's fallbacks in the pods' logs (`*.log` under `logs`, any of the app's pods and restarts)
    from the first rebalance a pod led with the operator's plan on: before it, `no_publication` is every
    new app's start (the operator plans once a pod has reported the topology), not a fallback from a plan.
    The log lines, in time order (log4j's and Spring Boot's time stamps both read)."""
    followed: list[str] = []
    fell_back: list[tuple[str, str]] = []
    for log in sorted(logs.rglob("*.log")):
        for line in log.read_text(errors="replace").splitlines():
            stamp = _LOGGED_AT.search(line)
            if stamp is None:
                continue
            at = "".join(stamp.groups())
            if _FOLLOWED in line:
                followed.append(at)
            elif _FELL_BACK in line:
                fell_back.append((at, line))
    first = min(followed, default=None)
    return [line for at, line in sorted(fell_back) if first is not None and at > first]
