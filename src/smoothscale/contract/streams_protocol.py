"""The names smoothscale's broker plugin (`bridge/broker-assignor`, KIP-1357), the operator and an app's pods
share when the app runs the streams rebalance protocol (`group.protocol=streams`, KIP-1071): their one home
on the Python side, mirrored by the plugin's `PlanFollower`, `PluginSettings` and `SmoothscaleTaskAssignor`
(a test reads the Java sources and fails when the two drift). docs/streams-protocol.md has the design.
"""

from __future__ import annotations

from typing import Final

ASSIGNOR_NAME: Final = "smoothscale"
"""The plugin's `TaskAssignor.name()`: the value of the group config `streams.assignor.name` that opts in."""
ASSIGNOR_CLASS: Final = "io.smoothscale.broker.SmoothscaleTaskAssignor"
"""What a broker's `group.streams.assignors` lists to load the plugin."""
BROKER_ASSIGNORS_CONFIG: Final = "group.streams.assignors"
"""Broker config listing the streams assignors a broker loads (names of built-in ones, or class names)."""
BUILT_IN_ASSIGNOR: Final = "sticky"
"""Kafka 4.4's built-in streams assignor: the default, and the plugin's fallback."""

PLANS_TOPIC: Final = "smoothscale-plans"
"""The compacted topic of plans: key the app's application id, value the publication's gzip'd JSON."""
GROUPS_TOPIC: Final = "smoothscale-groups"
"""The compacted topic where the plugin publishes Kafka's view of each group it assigns
(`describeStreamsGroups`, which no Python client has): key the application id, value
`{"publishedMs": ..., "view": ...}` as JSON."""
PLANS_BOOTSTRAP_PROPERTY: Final = "smoothscale.plans.bootstrap.servers"
"""The broker JVM's system property naming the cluster that holds the plan topic."""

APP_TAG: Final = "smoothscale.app"
"""Client tag (`client.tag.smoothscale.app`) naming the member's plan: the app's application id."""
POD_TAG: Final = "smoothscale.pod"
"""Client tag (`client.tag.smoothscale.pod`) naming the member's pod."""

ASSIGNOR_NAME_CONFIG: Final = "streams.assignor.name"
"""Group config choosing a streams group's assignor."""
TRIGGER_CONFIG: Final = "streams.rack.aware.assignment.tags"
"""Group config the operator changes to make the coordinator compute a new assignment
(docs/streams-protocol.md: in Kafka 4.4 a change of a group's assignment configurations is the one way to
ask for one from outside)."""
TRIGGER_PREFIX: Final = "smoothscale.request."
"""What makes each value of `TRIGGER_CONFIG` new: `<POD_TAG>,smoothscale.request.<request>`."""
