"""What a simulation runs: the app, its pods, the operator's settings and a timeline of events.

Scenarios are written in YAML or JSON with camelCase field names (like the planner's contract). Every model
forbids unknown fields and `parse_scenario` reports each problem with the path of the field that has it
(`events[2].pods: ...`), so that a typo in a scenario file is an error a person can act on, not a silently
different experiment. Parsing the YAML text itself is the CLI's job: this package stays free of file
formats.
"""

from __future__ import annotations

from collections import Counter
from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError
from pydantic.alias_generators import to_camel

from smoothscale.assignor.models import PlannerConfig
from smoothscale.resource import ScalingSpec
from smoothscale.resource.durations import parse_duration

Seconds = Annotated[float, Field(ge=0)]


class ScenarioError(ValueError):
    """A scenario that cannot be simulated; `problems` holds one line per problem, each naming its field."""

    def __init__(self, problems: list[str]) -> None:
        super().__init__("invalid scenario:\n" + "\n".join(f"  - {p}" for p in problems))
        self.problems = problems


class ScenarioModel(BaseModel):
    model_config = ConfigDict(
        alias_generator=to_camel, populate_by_name=True, extra="forbid", frozen=True, validate_default=True
    )


class PodSpec(ScenarioModel):
    """A pod's machine: how fast it restores state and processes records, and whether its state survives."""

    restore_records_per_second_per_copy: float = Field(
        50_000, gt=0, description="restore speed of one restoring copy (one changelog consumer)"
    )
    restore_records_per_second_per_pod: float = Field(
        100_000, gt=0, description="restore speed of all the pod's restoring copies together (disk, network)"
    )
    process_records_per_second: float = Field(
        20_000, gt=0, description="input records per second the pod processes, shared by its active tasks"
    )
    persistent_volume: bool = Field(True, description="state survives a restart (PVC) or is lost")
    capacity: int = Field(
        1,
        ge=1,
        description="processing threads, the unit of the figures' per-pod load; the operator plans every pod "
        "as one unit (it knows no pod's capacity)",
    )


class PodsSpec(PodSpec):
    count: int = Field(ge=1, description="pods at the start, named <app>-0 .. <app>-<count-1>")


class SubtopologySpec(ScenarioModel):
    name: str | None = Field(None, min_length=1, description="subtopology name; default its position")
    partitions: int = Field(ge=1, description="tasks of the subtopology")
    stateful: bool = True
    changelog_records: int = Field(
        1_000_000, ge=0, description="records a copy without state must restore (compacted changelog)"
    )
    input_records_per_second: float = Field(100, ge=0, description="input rate of each task")
    input_partitions_per_task: int = Field(1, ge=1, description="input partitions each task reads")
    replication_factor: int = Field(
        2, ge=1, description="replicas of each input partition, in distinct zones picked by the seed"
    )
    weight: float = Field(1.0, gt=0, description="the planner's relative weight of the tasks")


class TopologySpec(ScenarioModel):
    subtopologies: list[SubtopologySpec] = Field(min_length=1)
    changelog_jitter: float = Field(
        0.0, ge=0, lt=1, description="each task's changelog size varies by up to this fraction (seeded)"
    )


class OperatorSpec(ScenarioModel):
    scrape_interval_seconds: float = Field(
        5, gt=0, description="how often the operator observes lags (the operator's default)"
    )
    apply_delay_seconds: Seconds = Field(
        0.25,
        description="time a pod takes to apply a published generation: the watch event, then the app stops "
        "or starts its tasks (the sandbox's workers take about 0.15 s: benchmarks/handover_bench.py)",
    )
    apply_jitter_seconds: Seconds = Field(0, description="extra apply delay, uniform in [0, this] (seeded)")
    handover_poll_seconds: float = Field(
        1, gt=0, description="how often the operator polls pods it waits on during a hand-over"
    )
    ack_delay_seconds: Seconds = Field(
        0.1,
        description="time from a pod applying a generation that revokes its tasks to the operator seeing it "
        "(the operator polls the pods a hand-over waits on every 0.1 s by default)",
    )
    startup_grace_seconds: Seconds = Field(
        30,
        description="the operator's startupGrace (its default): a scale-out's plan waits up to this long for "
        "all its new pods to report, so that they share the tasks in one migration",
    )
    replan_min_interval_seconds: Seconds | None = Field(
        None,
        description="a debounce between smoothscale's catch-up re-plans (the operator has none); null = none",
    )


class FailoverSpec(ScenarioModel):
    """When a lost pod's tasks start elsewhere (docs/failover.md)."""

    lease_seconds: float | None = Field(
        None,
        gt=0,
        description="runtime ClientLibrary: the pods' lease; once the operator has seen no renewal for this "
        "long it fails their tasks over to their most caught-up copies; null: no lease, a lost pod's tasks "
        "wait for it to come back (the operator as it runs without leases)",
    )
    session_timeout_seconds: float = Field(
        45,
        gt=0,
        description="runtime KafkaStreams: the members' session.timeout.ms (Kafka's default 45 s); once it "
        "expires Kafka's rebalance gives a lost member's actives to their most caught-up copies",
    )


class EventBase(ScenarioModel):
    at: Seconds = Field(description="seconds from the start of the simulation")


class ScaleOut(EventBase):
    """`replicas` raised by `pods`: the operator creates the missing pods (or takes back leaving ones)."""

    type: Literal["scaleOut"]
    pods: int = Field(ge=1, description="pods to add to replicas")
    pod_spec: PodSpec | None = Field(
        None, description="machine of the pods created from now on; default the scenario's"
    )


class ScaleIn(EventBase):
    """`replicas` lowered: by `pods` (the operator marks the highest ordinals leaving), or by draining
    exactly `podNames` (a person marks them leaving; they count toward the excess)."""

    type: Literal["scaleIn"]
    pods: int | None = Field(None, ge=1, description="pods to remove from replicas")
    pod_names: list[str] | None = Field(None, min_length=1, description="or exactly these pods")


class HostSwap(EventBase):
    """Online host swap (the drafts): a new pod template. With `scaling.updateStrategy: Swap` (the default)
    the operator surges new pods (up to `scaling.maxSurge`, 100% by default) and marks an old pod leaving
    for each new pod that is ready (has read its assignment); with `RollingRestart` it restarts the old pods
    one at a time, each once the app has settled."""

    type: Literal["hostSwap"]
    pod_spec: PodSpec | None = Field(
        None, description="machine of the pods created from now on; default the scenario's"
    )


class PodCrash(EventBase):
    type: Literal["podCrash"]
    pod: str = Field(min_length=1)
    restart_after_seconds: Seconds | None = Field(30, description="null: the pod never comes back")
    volume_lost: bool = Field(False, description="the pod comes back without its state even with a volume")


class ZoneOutage(EventBase):
    type: Literal["zoneOutage"]
    zone: str = Field(min_length=1)
    duration_seconds: float | None = Field(
        None, gt=0, description="the zone's pods come back (with their volumes) after this; null: never"
    )


class Drain(EventBase):
    """A person marks one pod leaving (`smoothscale drain`); the operator replaces it unless `replicas` is
    lowered with it."""

    type: Literal["drain"]
    pod: str = Field(min_length=1)
    replace: bool = Field(True, description="keep replicas, so that the operator creates a replacement")


class InputRate(EventBase):
    type: Literal["inputRate"]
    factor: float = Field(gt=0, description="multiplies the input rate of the affected tasks")
    subtopology: str | None = Field(None, description="only this subtopology; default all")


class OperatorRestart(EventBase):
    """The operator (the drafts' group leader) crashes and restarts, losing everything it did not publish."""

    type: Literal["operatorRestart"]


Event = Annotated[
    ScaleOut | ScaleIn | HostSwap | PodCrash | ZoneOutage | Drain | InputRate | OperatorRestart,
    Field(discriminator="type"),
]
EVENT_TYPES = (
    "scaleOut",
    "scaleIn",
    "hostSwap",
    "podCrash",
    "zoneOutage",
    "drain",
    "inputRate",
    "operatorRestart",
)


class Scenario(ScenarioModel):
    name: str = Field(min_length=1)
    description: str = ""
    app: str = Field("app", pattern=r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$", description="pods are <app>-<n>")
    zones: list[str] = Field(min_length=1, description="zones pods are spread over (topology spread)")
    pods: PodsSpec
    topology: TopologySpec
    planner: PlannerConfig = Field(default_factory=PlannerConfig)
    scaling: ScalingSpec = Field(
        default_factory=ScalingSpec,
        description="the StreamsApp's spec.scaling, as the operator reads it (updateStrategy, maxSurge, "
        "scaleDownTimeout, scaleDownStabilization)",
    )
    operator: OperatorSpec = Field(default_factory=OperatorSpec)
    runtime: Literal["ClientLibrary", "KafkaStreams"] = Field(
        "ClientLibrary",
        description="the app's spec.runtime: KafkaStreams pods hand tasks over through Kafka's rebalance (a "
        "plan is published in one generation) and fail over when a member's session expires",
    )
    failover: FailoverSpec = Field(default_factory=FailoverSpec)
    initial_standby_lag_records: int = Field(
        0, ge=0, description="how far the standbys are behind at the start (KIP-441's lagging standbys)"
    )
    events: list[Event] = Field(default_factory=list)
    duration_seconds: float | None = Field(
        None, gt=0, description="simulate exactly this long; null: until balanced after the last event"
    )
    max_duration_seconds: float = Field(
        2 * 86_400, gt=0, description="give up waiting for balance after this long"
    )

    def planner_config(self) -> PlannerConfig:
        """`planner`, with `scaling.scaleDownTimeout` where it is set: as the operator's `planner_config`
        takes the timeout from the spec's scaling settings."""
        timeout = self.scaling.scale_down_timeout
        if timeout is None:
            return self.planner
        return self.planner.model_copy(update={"scale_down_timeout_seconds": parse_duration(timeout)})

    def failover_seconds(self) -> float | None:
        """After how long a lost pod's tasks fail over: the session (Kafka Streams), the lease, or never."""
        if self.runtime == "KafkaStreams":
            return self.failover.session_timeout_seconds
        return self.failover.lease_seconds

    def subtopology_names(self) -> list[str]:
        return [s.name if s.name is not None else str(i) for i, s in enumerate(self.topology.subtopologies)]


def parse_scenario(data: object) -> Scenario:
    """A validated scenario from parsed YAML/JSON; raises `ScenarioError` naming every bad field."""
    try:
        scenario = Scenario.model_validate(data)
    except ValidationError as error:
        raise ScenarioError([_problem(e["loc"], e["msg"]) for e in error.errors(include_url=False)]) from None
    problems = scenario_problems(scenario)
    if problems:
        raise ScenarioError(problems)
    return scenario


def _problem(loc: tuple[int | str, ...], message: str) -> str:
    path = ""
    for part in loc:
        if isinstance(part, int):
            path += f"[{part}]"
        elif part in EVENT_TYPES:
            path += f" ({part})"  # the union member pydantic tried, named by the event's type
        else:
            path += f".{part}" if path else part
    return f"{path or 'scenario'}: {message}"


def scenario_problems(scenario: Scenario) -> list[str]:
    """Cross-field checks: names that must exist, `replicas` that must stay positive.

    Which pods exist when is the operator's decision (`plan_pod_set`: the lowest free ordinal, reused once
    the assignment no longer names it), known only by running the scenario, which then reports a pod missing
    at its time. Here a name is checked against the ordinals that can exist by then: an ordinal is never
    higher than the number of pods created before it, and each event adds at most its new replicas, a swap's
    surge (every pod) or a drain's replacement.
    """
    problems: list[str] = []
    for dup in sorted(z for z, n in Counter(scenario.zones).items() if n > 1):
        problems.append(f"zones: zone {dup!r} appears more than once")
    names = scenario.subtopology_names()
    for dup in sorted(n for n, k in Counter(names).items() if k > 1):
        problems.append(f"topology.subtopologies[].name: {dup!r} appears more than once")
    planned_timeout = scenario.planner.scale_down_timeout_seconds
    if scenario.scaling.scale_down_timeout is not None and planned_timeout is not None:
        problems.append(
            "scaling.scaleDownTimeout: set it here or as planner.scaleDownTimeoutSeconds, not both "
            "(the operator has one setting, spec.scaling.scaleDownTimeout)"
        )
    if scenario.duration_seconds is None and not scenario.events:
        problems.append("durationSeconds: required when there are no events (nothing to wait for)")
    replicas = created = scenario.pods.count
    for i, event in sorted(enumerate(scenario.events), key=lambda e: e[1].at):
        where = f"events[{i}] ({event.type})"
        if isinstance(event, ScaleOut):
            replicas += event.pods
            created += event.pods
        elif isinstance(event, HostSwap):
            created += replicas
        elif isinstance(event, Drain):
            problems.extend(_unknown_pod(scenario.app, where, "pod", event.pod, created))
            if event.replace:
                created += 1
            else:
                replicas -= 1
        elif isinstance(event, ScaleIn):
            if (event.pods is None) == (event.pod_names is None):
                problems.append(f"{where}: give exactly one of pods and podNames")
                continue
            for name in event.pod_names or []:
                problems.extend(_unknown_pod(scenario.app, where, "podNames", name, created))
            leaving = len(event.pod_names) if event.pod_names is not None else event.pods or 0
            if leaving >= replicas:
                problems.append(f"{where}: retires {leaving} of {replicas} staying pods; keep at least one")
            replicas -= leaving
        elif isinstance(event, PodCrash):
            problems.extend(_unknown_pod(scenario.app, where, "pod", event.pod, created))
        elif isinstance(event, ZoneOutage) and event.zone not in scenario.zones:
            problems.append(f"{where}.zone: unknown zone {event.zone!r}; expected one of zones")
        elif (
            isinstance(event, InputRate) and event.subtopology is not None and event.subtopology not in names
        ):
            problems.append(f"{where}.subtopology: unknown subtopology {event.subtopology!r}")
    return problems


def _unknown_pod(app: str, where: str, field: str, pod: str, created: int) -> list[str]:
    prefix, _, ordinal = pod.rpartition("-")
    if prefix == app and ordinal.isdigit() and int(ordinal) < created and str(int(ordinal)) == ordinal:
        return []
    return [f"{where}.{field}: no pod {pod!r} at that time; expected one of {app}-0 .. {app}-{created - 1}"]
