"""The Java sample Kafka Streams app on a real node: its pods run from an image of their own
(`tools/image/java-app.sh`: a Debian JRE root made by mmdebstrap, the sample app's shaded jar) by the real
kubelet, against the sandbox's three brokers, scaled 3 -> 6 -> 3 by the operator installed with the chart.

The brokers listen on loopback only. Pods reach them the way they reach the API server: each broker also
has a listener advertised at the node's bridge address (`KafkaCluster(advertise=node.gateway)`), whose port
the node forwards to loopback (`RunningNode.forward`); the app's pods and the operator's pod bootstrap there
(`spec.kafka.bootstrapServers`), and Kafka tells them every broker's address on that listener, while the
host (the order feed, the checks) keeps the loopback listeners. Orders flow in all along the walk; after it
every order must be counted once in the totals and Kafka's view of the group must be the operator's plan
(`demo_kafka.kafka_checks`), and each step must settle with Kafka's view the plan (`observe.settle`).
"""

from __future__ import annotations

import contextlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import kubernetes

from smoothscale.contract import shared_names as contract

from .app_view import AppReader
from .background import running
from .demo import APP
from .demo_kafka import (
    ORDERS,
    OrderFeed,
    classic_plan_differs,
    kafka_checks,
    kafka_streams_app,
    sample_topics,
)
from .group_view import GroupView
from .kafka.broker import KafkaCluster
from .kafka.topics import create_topic
from .real_node import RunningNode
from .real_node_demo import ZONE_SPREAD, RealNodeWalk, StepOutcome, create_app

Json = dict[str, Any]

KAFKA_NAMESPACE = "kafka-streams"
STEPS = 3
"""`RealNodeWalk.STEPS`' first three: 3 pods, 6, 3."""
ORDERS_PER_SECOND = 20
STEP_TIMEOUT = 300.0
"""A JVM in a pod starts in 10-20 s on an idle machine, and took over a minute under a load average of 69."""


APP_SETTINGS = {
    "SMOOTHSCALE_BRIDGE": "properties",
    "APP_CLIENT_ID": "$(SMOOTHSCALE_POD_NAME)",
    "STREAMS_CLIENT_ID": "${env:APP_CLIENT_ID}",
    "STREAMS_STATE_DIR": "$(SMOOTHSCALE_STATE_DIR)/kafka-streams",
}
"""The app's settings as a team's pod template gives them, from the operator's variables (first in the
container's env) by `$(NAME)` references that the kubelet expands: the sample that adopts smoothscale by its
settings alone (`PlainOrdersApp`: Kafka's `EnvVarConfigProvider`), its `client.id` `${env:APP_CLIENT_ID}`,
which is the pod's name (the bridge refuses any other), and its state directory below the state volume's.
Left literal, the bridge would refuse the client id and the state would not be on the volume."""


def java_app(image: str, spec_kafka: Mapping[str, Any]) -> Json:
    """The `smoothscale demo --kafka` app (`demo_kafka.kafka_streams_app`) with pods of `image`: the sample
    app reading its assignment with its ServiceAccount, bootstrapping at `spec_kafka`'s (forwarded) brokers,
    its state in the pod's emptyDir (no volume provisioner runs), ready once the bridge serves its metrics on
    the port the operator gives it (`SMOOTHSCALE_METRICS_PORT`); its settings `APP_SETTINGS`."""
    app = kafka_streams_app(spec_kafka)
    app["metadata"]["namespace"] = KAFKA_NAMESPACE
    del app["spec"]["storage"]
    spec = app["spec"]
    port = int(spec["metrics"]["port"])
    (container,) = spec["template"]["spec"]["containers"]
    variables = {
        **{variable["name"]: variable["value"] for variable in container["env"]},
        "KAFKA_BOOTSTRAP_SERVERS": str(spec_kafka["bootstrapServers"]),
        **APP_SETTINGS,
    }
    spec["template"]["spec"] = {
        "serviceAccountName": APP,
        "terminationGracePeriodSeconds": 30,
        "topologySpreadConstraints": ZONE_SPREAD,
        "containers": [
            {
                "name": "app",
                "image": image,
                "imagePullPolicy": "Never",
                "env": [{"name": name, "value": value} for name, value in variables.items()],
                "ports": [{"name": "metrics", "containerPort": port}],
                "readinessProbe": {
                    "httpGet": {"path": str(spec["metrics"]["path"]), "port": "metrics"},
                    "periodSeconds": 1,
                },
                "volumeMounts": [{"name": contract.STATE_VOLUME, "mountPath": "/state"}],
            }
        ],
    }
    return app


@dataclass
class JavaWalkOutcome:
    """The steps (`RealNodeWalk`), the orders produced and what the Kafka checks found."""

    steps: list[StepOutcome]
    orders: int = 0
    problems: list[str] = field(default_factory=list)


def walk_java_app(
    api: kubernetes.client.ApiClient,
    nodes: Sequence[RunningNode],
    kafka: KafkaCluster,
    image: str,
    work_dir: Path,
) -> JavaWalkOutcome:
    """Create the sample app's topics (partition p on the broker of zone p mod 3) and the app, feed orders
    while it walks 3 -> 6 -> 3 on `nodes`, then check the totals and Kafka's view. `kafka` was started with
    `advertise` one node's gateway; every node forwards its ports there for the walk's length."""
    for topic, partitions in sample_topics().items():
        replicas = [[partition % 3 + 1] for partition in range(partitions)]
        create_topic(kafka.bootstrap_servers, topic, partitions, replicas=replicas)
    spec_kafka = {
        "bootstrapServers": kafka.forwarded_bootstrap_servers,
        "refreshInterval": "5s",
        "timeout": "3s",
    }
    feed = OrderFeed(kafka.bootstrap_servers, {ORDERS: ORDERS_PER_SECOND})
    with contextlib.ExitStack() as forwards:
        for node in nodes:
            forwards.enter_context(node.forward(kafka.forwarded_ports, kafka.advertise))
        create_app(api, java_app(image, spec_kafka))
        walk = RealNodeWalk(
            api,
            nodes,
            namespace=KAFKA_NAMESPACE,
            steps=STEPS,
            group_view=GroupView(kafka.bootstrap_servers),
            step_timeout=STEP_TIMEOUT,
        )
        with running(feed.run, "orders feed"):
            outcome = JavaWalkOutcome(walk.run())
        outcome.orders = feed.count
        publication = AppReader(api, KAFKA_NAMESPACE).publication(APP)
        differs = classic_plan_differs(kafka.bootstrap_servers, work_dir, publication)
        outcome.problems = kafka_checks(kafka.bootstrap_servers, feed.count, differs)
    return outcome
