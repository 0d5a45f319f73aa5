"""The topology a Kafka Streams app reports, against the one its StreamsApp spells out.

The bridge on the app's group leader reports every subtopology it sees in a rebalance (partitions, whether it
has state, its input and changelog topics: `smoothscale_bridge_topology_partitions`). The operator shows it
in status and names every way a hand-written `spec.topology` disagrees with it, since a spec that lags the
app (a new subtopology, renumbered subtopologies, more input partitions) makes every plan name tasks the app
does not have, or miss tasks it has. Pure: scrapes and a spec in, facts out.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence

from ..resource import StreamsAppSpec, SubtopologySpec, TopologySpec
from .observed import LearnedSubtopology, PodMetrics, ScrapeResult


def learned_topology(results: Mapping[str, ScrapeResult]) -> tuple[LearnedSubtopology, ...] | None:
    """The app's topology as its pods report it; None while no pod has led a rebalance yet.

    Pods that led rebalances at different times may report different versions (an upgrade in progress):
    the one most pods report wins, ties going to the larger topology (the newer app, usually).
    """
    reports = Counter(r.topology for r in results.values() if isinstance(r, PodMetrics) and r.topology)
    if not reports:
        return None
    return max(reports, key=lambda t: (reports[t], sum(s.partitions for s in t), len(t), t))


def topology_differences(spec: TopologySpec, learned: Sequence[LearnedSubtopology]) -> list[str]:
    """Each way `spec.topology` differs from the app's reported topology, in words a person can act on."""
    written = {sub.name: sub for sub in spec.subtopologies}
    reported = {sub.name: sub for sub in learned}
    differences: list[str] = []
    for name in sorted(reported.keys() - written.keys()):
        differences.append(
            f"subtopology {name} ({reported[name].partitions} partitions) runs in the app but is missing "
            "from spec.topology"
        )
    for name in sorted(written.keys() - reported.keys()):
        differences.append(f"subtopology {name} is in spec.topology but the app has no such subtopology")
    for name in sorted(written.keys() & reported.keys()):
        mine, theirs = written[name], reported[name]
        if mine.partitions != theirs.partitions:
            differences.append(
                f"subtopology {name} has {theirs.partitions} partitions in the app, "
                f"{mine.partitions} in spec.topology"
            )
        if mine.stateful and theirs.stateful and not theirs.changelog_topics:
            differences.append(
                f"subtopology {name}'s stores have logging disabled in the app (no changelog topic): Kafka "
                "gives its tasks no standby and no warmup can restore them; set stateful: false for it in "
                "spec.topology, or enable logging on its stores"
            )
        elif mine.stateful != theirs.stateful:
            differences.append(
                f"subtopology {name} is {'stateful' if theirs.stateful else 'stateless'} in the app, "
                f"{'stateful' if mine.stateful else 'stateless'} in spec.topology"
            )
    return differences


def with_reported_topology(
    spec: StreamsAppSpec, learned: Sequence[LearnedSubtopology] | None, app: str
) -> StreamsAppSpec | None:
    """The spec to plan with: as written when it lists a topology; else (a KafkaStreams app that leaves it
    to the app) with the reported one; None while the app has reported none: no plan can name its tasks.

    A reported subtopology's stores are read from its changelog topics' names (Kafka Streams names them
    `<application id>-<store>-changelog`; the application id is `spec.kafka.applicationId`, else the app's
    name), so that `spec.kafka`'s changelog sizes map onto it as onto a written one.

    A written stateful subtopology that the app reports without a changelog topic (its stores have logging
    disabled) is planned stateless: Kafka creates no standby for it, so a plan giving it standbys or
    warmups could never be followed and its pods would never report following the plan (TopologyMismatch
    still names the difference).
    """
    if spec.topology.subtopologies:
        return _without_impossible_standbys(spec, learned)
    if not learned:
        return None
    application_id = spec.kafka.application_id if spec.kafka and spec.kafka.application_id else app
    prefix, suffix = f"{application_id}-", "-changelog"
    subtopologies = [
        SubtopologySpec(
            name=sub.name,
            partitions=sub.partitions,
            stateful=bool(sub.changelog_topics),  # state without a changelog cannot be warmed up elsewhere
            input_topics=list(sub.input_topics),
            stores=[
                topic[len(prefix) : -len(suffix)]
                for topic in sub.changelog_topics
                if topic.startswith(prefix) and topic.endswith(suffix) and len(topic) > len(prefix + suffix)
            ],
        )
        for sub in learned
    ]
    return spec.model_copy(update={"topology": TopologySpec(subtopologies=subtopologies)})


def _without_impossible_standbys(
    spec: StreamsAppSpec, learned: Sequence[LearnedSubtopology] | None
) -> StreamsAppSpec:
    """`spec` with each stateful subtopology the app reports without a changelog topic made stateless."""
    unlogged = {sub.name for sub in learned or () if not sub.changelog_topics}
    written = spec.topology.subtopologies
    if not any(sub.stateful and sub.name in unlogged for sub in written):
        return spec
    subtopologies = [
        sub.model_copy(update={"stateful": False}) if sub.name in unlogged else sub for sub in written
    ]
    return spec.model_copy(
        update={"topology": spec.topology.model_copy(update={"subtopologies": subtopologies})}
    )
