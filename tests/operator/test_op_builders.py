"""The objects the operator creates, built by pure functions: pods, state claims, the assignment ConfigMap."""

from __future__ import annotations

import base64
import json
from typing import Any

import pytest

from smoothscale.contract.configmap import CorruptAssignment, from_configmap
from smoothscale.contract.publication import ClientAssignment, Publication, Revocation
from smoothscale.control import object_names
from smoothscale.operator.appref import AppRef
from smoothscale.operator.podset import KAFKA_STREAMS_GRACE_SECONDS, build_pod, build_state_claim
from smoothscale.operator.publish import build_assignment_configmap
from smoothscale.resource import StreamsAppSpec, load_spec, template_revision

APP = AppRef("streams", "orders", "uid-1")


def spec(**changes: Any) -> StreamsAppSpec:
    raw: dict[str, Any] = {
        "template": {
            "metadata": {
                "labels": {"team": "payments", object_names.APP_LABEL: "spoofed"},
                "annotations": {"a": "b"},
            },
            "spec": {
                "containers": [
                    {"name": "app", "image": "orders:1", "env": [{"name": "SMOOTHSCALE_APP", "value": "x"}]}
                ]
            },
        },
        "topology": {"subtopologies": [{"name": "0", "partitions": 4}]},
    }
    raw.update(changes)
    return load_spec(raw)


def test_a_pod_carries_contract_3s_labels_its_owner_and_the_template() -> None:
    pod = build_pod(APP, spec(), 2, "abc")
    meta = pod["metadata"]
    assert meta["name"] == "orders-2" and meta["namespace"] == "streams"
    assert meta["labels"] == {
        "team": "payments",
        object_names.NAME_LABEL: "orders",
        object_names.MANAGED_BY_LABEL: "smoothscale",
        object_names.APP_LABEL: "orders",
        object_names.REVISION_LABEL: "abc",
    }
    assert meta["annotations"] == {"a": "b"}
    assert meta["ownerReferences"] == [
        {
            "apiVersion": "smoothscale.io/v1alpha1",
            "kind": "StreamsApp",
            "name": "orders",
            "uid": "uid-1",
            "controller": True,
            "blockOwnerDeletion": True,
        }
    ]
    assert pod["spec"]["hostname"] == "orders-2"


def test_a_pod_gets_the_clients_environment_unless_the_template_sets_it() -> None:
    env = {e["name"]: e for e in build_pod(APP, spec(), 0, "abc")["spec"]["containers"][0]["env"]}
    assert env[object_names.APP_ENV]["value"] == "x", "the template's own value wins"
    assert env[object_names.POD_NAME_ENV]["valueFrom"]["fieldRef"]["fieldPath"] == "metadata.name"
    assert env[object_names.NAMESPACE_ENV]["valueFrom"]["fieldRef"]["fieldPath"] == "metadata.namespace"
    assert env[object_names.ASSIGNMENT_CONFIGMAP_ENV]["value"] == "orders-assignment"


def test_the_operators_variables_come_first_so_that_the_templates_can_refer_to_them() -> None:
    """Kubernetes expands `$(NAME)` only from variables earlier in the list: a template's
    `$(SMOOTHSCALE_POD_NAME)` stayed literal while the operator appended its own after the template's."""
    template_env = [
        {"name": "STREAMS_CLIENT_ID", "value": "$(SMOOTHSCALE_POD_NAME)"},
        {"name": "STATE_DIR", "value": "$(SMOOTHSCALE_STATE_DIR)/streams"},
    ]
    template = {"spec": {"containers": [{"name": "app", "image": "orders:1", "env": template_env}]}}
    env = build_pod(APP, spec(template=template), 0, "abc")["spec"]["containers"][0]["env"]
    assert [variable["name"] for variable in env] == [
        object_names.POD_NAME_ENV,
        object_names.NAMESPACE_ENV,
        object_names.APP_ENV,
        object_names.ASSIGNMENT_CONFIGMAP_ENV,
        object_names.METRICS_PORT_ENV,
        object_names.STATE_DIR_ENV,
        "STREAMS_CLIENT_ID",
        "STATE_DIR",
    ]


@pytest.mark.parametrize(
    ("changes", "port"),
    [({}, "8080"), ({"runtime": "KafkaStreams"}, "9494"), ({"metrics": {"port": 9100}}, "9100")],
)
def test_every_pod_gets_the_metrics_port_the_operator_scrapes(changes: dict[str, Any], port: str) -> None:
    """The README promised SMOOTHSCALE_METRICS_PORT; no pod got it. A Kafka Streams app's default is the
    bridge's own port, where the operator then scrapes it."""
    app_spec = spec(**changes)
    env = {e["name"]: e for e in build_pod(APP, app_spec, 0, "abc")["spec"]["containers"][0]["env"]}
    assert env[object_names.METRICS_PORT_ENV]["value"] == port == str(app_spec.metrics.port)


def test_a_pod_learns_its_lease_from_the_env_only_when_the_app_has_one() -> None:
    """`spec.failover.leaseSeconds` reaches every container as SMOOTHSCALE_LEASE_SECONDS; an app without it
    builds the very pods it built before (no variable, the same revision: nothing rolls)."""
    leased = spec(failover={"leaseSeconds": 12})
    pod = build_pod(APP, leased, 0, "abc")
    for container in pod["spec"]["containers"]:
        assert {e["name"]: e.get("value") for e in container["env"]}[object_names.LEASE_SECONDS_ENV] == "12"
    for plain in (spec(), spec(failover={})):
        env = build_pod(APP, plain, 0, "abc")["spec"]["containers"][0]["env"]
        assert object_names.LEASE_SECONDS_ENV not in {e["name"] for e in env}
        assert build_pod(APP, plain, 0, "abc") == build_pod(APP, spec(), 0, "abc")
    assert template_revision(spec()) == template_revision(spec(failover={})) == template_revision(leased), (
        "the revision is the template's: setting or changing a lease rolls no pod (pods created from then on "
        "get it)"
    )


def test_the_state_directory_is_where_the_container_mounts_the_state_volume() -> None:
    own = {"name": object_names.STATE_VOLUME, "mountPath": "/var/lib/streams"}
    sidecar = {"name": "proxy", "image": "proxy:1"}
    template = {
        "spec": {"containers": [{"name": "app", "image": "orders:1", "volumeMounts": [own]}, sidecar]}
    }
    app, proxy = build_pod(APP, spec(template=template), 0, "abc")["spec"]["containers"]
    assert {e["name"]: e.get("value") for e in app["env"]}[object_names.STATE_DIR_ENV] == "/var/lib/streams"
    assert app["volumeMounts"] == [own], "the template's mount is kept as it is"
    assert object_names.STATE_DIR_ENV not in {e["name"] for e in proxy["env"]}, (
        "no state where none is mounted"
    )
    assert "volumeMounts" not in proxy
    (first,) = build_pod(APP, spec(), 0, "abc")["spec"]["containers"]
    default = {"name": object_names.STATE_VOLUME, "mountPath": object_names.DEFAULT_STATE_DIR}
    assert first["volumeMounts"] == [default], "unmounted, the state volume goes to the first container"
    assert {e["name"]: e.get("value") for e in first["env"]}[
        object_names.STATE_DIR_ENV
    ] == object_names.DEFAULT_STATE_DIR


def test_state_lives_in_the_ordinals_claim_with_storage_and_in_an_emptydir_without() -> None:
    volumes = {v["name"]: v for v in build_pod(APP, spec(), 1, "abc")["spec"]["volumes"]}
    assert volumes[object_names.STATE_VOLUME] == {"name": "state", "emptyDir": {}}
    assert volumes[object_names.ASSIGNMENT_VOLUME]["configMap"] == {
        "name": "orders-assignment",
        "optional": True,
    }
    assert build_state_claim(APP, spec(), 1) is None

    stored = spec(storage={"size": "10Gi", "storageClassName": "gp3"})
    volumes = {v["name"]: v for v in build_pod(APP, stored, 1, "abc")["spec"]["volumes"]}
    assert volumes[object_names.STATE_VOLUME]["persistentVolumeClaim"] == {"claimName": "orders-state-1"}
    claim = build_state_claim(APP, stored, 1)
    assert claim is not None and claim["metadata"]["name"] == "orders-state-1"
    assert claim["spec"] == {
        "accessModes": ["ReadWriteOnce"],
        "resources": {"requests": {"storage": "10Gi"}},
        "storageClassName": "gp3",
    }


def test_the_revision_changes_with_the_template_only() -> None:
    assert template_revision(spec()) == template_revision(spec(replicas=7))
    other = spec(template={"spec": {"containers": [{"name": "app", "image": "orders:2"}]}})
    assert template_revision(other) != template_revision(spec())
    assert len(template_revision(spec())) == 10


def test_the_configmap_round_trips_a_publication() -> None:
    publication = Publication(
        generation=7,
        assignment={
            "orders-0": ClientAssignment(active=["0_1"], standby=["0_2"]),
            "orders-1": ClientAssignment(),
        },
        revoking={"0_3": Revocation(owner="orders-1", generation=7)},
    )
    configmap = build_assignment_configmap(APP, publication)
    assert configmap["metadata"]["name"] == "orders-assignment"
    assert configmap["data"] == {"generation": "7"}
    assert from_configmap(configmap) == publication


@pytest.mark.parametrize(
    "binary",
    [
        {},
        {object_names.ASSIGNMENT_KEY: "not base64!"},
        {object_names.ASSIGNMENT_KEY: base64.b64encode(b"not gzip").decode()},
    ],
)
def test_a_configmap_without_a_publication_is_unreadable(binary: dict[str, str]) -> None:
    with pytest.raises(CorruptAssignment):
        from_configmap({"binaryData": binary})


def test_fifty_thousand_tasks_fit_in_a_configmap() -> None:
    """Contract 3: 50,000 tasks (with a standby each) over 1,000 pods, far below the 1 MiB object limit."""
    tasks = [f"{sub}_{partition}" for sub in range(10) for partition in range(5_000)]
    active: dict[str, list[str]] = {f"orders-{pod}": [] for pod in range(1_000)}
    standby: dict[str, list[str]] = {f"orders-{pod}": [] for pod in range(1_000)}
    for index, task in enumerate(tasks):
        active[f"orders-{index % 1000}"].append(task)
        standby[f"orders-{(index + 1) % 1000}"].append(task)
    roles = {pod: ClientAssignment(active=active[pod], standby=standby[pod]) for pod in active}
    configmap = build_assignment_configmap(APP, Publication(generation=1, assignment=roles))
    size = len(json.dumps(configmap))
    assert size < 512 * 1024, f"{size} bytes"


def test_a_kafka_streams_pod_gets_a_grace_period_that_fits_an_exactly_once_close() -> None:
    """60 s unless the template says otherwise (`podset.KAFKA_STREAMS_GRACE_SECONDS`); other pods keep
    Kubernetes' default (the field left out)."""
    streams = build_pod(APP, spec(runtime="KafkaStreams"), 0, "abc")
    assert streams["spec"]["terminationGracePeriodSeconds"] == KAFKA_STREAMS_GRACE_SECONDS == 60
    assert "terminationGracePeriodSeconds" not in build_pod(APP, spec(), 0, "abc")["spec"]
    own = spec(runtime="KafkaStreams")
    own_template = own.template.model_dump(mode="json")
    own_template["spec"]["terminationGracePeriodSeconds"] = 120
    chosen = spec(runtime="KafkaStreams", template=own_template)
    assert build_pod(APP, chosen, 0, "abc")["spec"]["terminationGracePeriodSeconds"] == 120
