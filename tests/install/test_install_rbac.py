"""RBAC least privilege: for every CI value set, the chart grants exactly what the operator's code uses.

What the operator needs is derived, not written down a second time:

- its own requests: `smoothscale.operator.access.CLIENT_ACCESS`, the table `KubeClient` enforces on every
  request (a call the table lacks fails in the operator's tests before it could fail on a cluster);
- kopf's requests for the registered handlers (`build_registry`): every resource a handler indexes, watches or
  runs daemons for is listed and watched, and patched where kopf keeps a finalizer or handler progress on it;
- kopf's framework, with the settings the operator really starts with (the rendered Deployment's arguments,
  parsed by `smoothscale operator`, then `handlers.lifecycle.configure`): Events are created when posting is
  on; CRDs are listed and watched unless scanning is off, and namespaces too when serving a list of them;
  without --standalone, the peering kind of the mode is listed, watched and patched (its own keep-alive).

Selectors resolve against the emulator's discovery (Kubernetes' built-in kinds, StreamsApp, kopf's peerings)
with kopf's own matching, which also says which resources are cluster-scoped: those can only be granted by a
ClusterRole, the rest go to a Role per namespace when `watchNamespaces` is set.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

import kopf
import pytest
from click.testing import CliRunner
from install_testkit import VALUE_SETS, Json, container_args, granted, of_kind, one, operator_options
from kopf._cogs.structs import references
from kopf._core.engines import peering
from kopf._core.intents import handlers as kopf_handlers

from smoothscale.cli.operator_command import operator_command
from smoothscale.operator import main
from smoothscale.operator.access import CLIENT_ACCESS, Access
from smoothscale.operator.config import OperatorConfig
from smoothscale.operator.context import OperatorContext
from smoothscale.operator.handlers import lifecycle
from smoothscale.sandbox.emulator import build_emulator

Scoped = tuple[Access, bool]  # the permission, and whether its resource is namespaced


def discovered() -> list[references.Resource]:
    """The API's resources as kopf sees them through discovery (here: the emulator's)."""
    return [
        references.Resource(
            group=res.group or "",
            version=res.version or "",
            plural=res.plural or "",
            kind=info.kind,
            namespaced=info.namespaced,
            subresources=frozenset(info.subresources or ()),
        )
        for res, info in build_emulator(peering=True).resources.items()
    ]


def operator_settings(args: list[str]) -> tuple[kopf.OperatorSettings, kopf.OperatorRegistry]:
    """kopf's settings and registry for an operator started with `args`: `smoothscale operator` parses them,
    the real `operator.main.run` calls `kopf.run` (captured here instead of running), and the settings are
    what kopf makes of those arguments, then what the operator's own startup handler configures."""
    captured: dict[str, Any] = {}

    def context_of(config: OperatorConfig) -> OperatorContext:
        captured["context"] = OperatorContext(config)
        return captured["context"]

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(kopf, "run", lambda **kwargs: captured.update(kwargs))
        patch.setattr(kopf, "configure", lambda **_: None)  # logging setup: not this test's business
        patch.setattr(main, "OperatorContext", context_of)
        CliRunner().invoke(operator_command, [*args, "--no-journal-stdout"], catch_exceptions=False)
    settings = kopf.OperatorSettings()
    # kopf's own mapping of run()'s arguments onto its settings (kopf/_core/reactor/running.py).
    settings.peering.clusterwide = captured["clusterwide"]
    if captured["peering_name"] is not None:
        settings.peering.mandatory = True
        settings.peering.name = captured["peering_name"]
    if captured["standalone"] is not None:
        settings.peering.standalone = captured["standalone"]
    lifecycle.configure(settings, captured["context"])  # the operator's startup handler does this
    registry: kopf.OperatorRegistry = captured["registry"]
    return settings, registry


def kopf_accesses(
    settings: kopf.OperatorSettings, registry: kopf.OperatorRegistry, resources: list[references.Resource]
) -> Iterator[tuple[references.Resource, str]]:
    served: list[kopf_handlers.ResourceHandler] = [
        *registry._indexing.get_all_handlers(),
        *registry._watching.get_all_handlers(),
        *registry._spawning.get_all_handlers(),
        *registry._changing.get_all_handlers(),
        *registry._webhooks.get_all_handlers(),
    ]
    for handler in served:
        assert handler.selector is not None
        for resource in handler.selector.select(resources):
            yield resource, "list"
            yield resource, "watch"
            if isinstance(handler, kopf_handlers.ChangingHandler) or getattr(
                handler, "requires_finalizer", False
            ):
                yield resource, "patch"
    framework: list[tuple[references.Selector, tuple[str, ...]]] = []
    if settings.posting.enabled:
        framework.append((references.EVENTS, ("create",)))
    if not settings.scanning.disabled:
        framework.append((references.CRDS, ("list", "watch")))
        if not settings.peering.clusterwide:
            framework.append((references.NAMESPACES, ("list", "watch")))
    framework += [(selector, ("list", "watch", "patch")) for selector in peering.guess_selectors(settings)]
    for selector, verbs in framework:
        for resource in selector.select(resources):
            for verb in verbs:
                yield resource, verb


def required(args: list[str]) -> set[Scoped]:
    """Every permission the operator started with `args` needs, with its scope."""
    resources = discovered()
    settings, registry = operator_settings(args)
    needed = {
        (Access(r.group, r.plural, verb), bool(r.namespaced))
        for r, verb in kopf_accesses(settings, registry, resources)
    }
    by_name = {(r.group, r.plural): r for r in resources}
    for access in CLIENT_ACCESS:
        resource = by_name[(access.group, access.resource.split("/")[0])]
        needed.add((access, bool(resource.namespaced)))
    return needed


def _namespaces(documents: Iterable[Json]) -> set[str]:
    return {doc["metadata"]["namespace"] for doc in documents}


@pytest.mark.parametrize("values", VALUE_SETS, ids=lambda p: p.name.removesuffix("-values.yaml"))
def test_chart_grants_exactly_what_the_code_uses(rendered: dict[str, list[Json]], values: Path) -> None:
    documents = rendered[values.name.removesuffix("-values.yaml")]
    args = container_args(documents)
    needed = required(args)
    namespaces = set(operator_options(documents)["namespaces"])
    cluster_role = granted(one(documents, "ClusterRole"))
    roles = of_kind(documents, "Role")
    if not namespaces:
        assert cluster_role == {access for access, _ in needed}
        assert roles == []
        return
    assert cluster_role == {access for access, namespaced in needed if not namespaced}
    assert _namespaces(roles) == namespaces == _namespaces(of_kind(documents, "RoleBinding"))
    for role in roles:
        assert granted(role) == {access for access, namespaced in needed if namespaced}, role["metadata"]


def test_only_the_own_peering_object_may_be_written(rendered: dict[str, list[Json]]) -> None:
    for documents in rendered.values():
        peering_name = operator_options(documents)["peering"]
        for role in [*of_kind(documents, "ClusterRole"), *of_kind(documents, "Role")]:
            for rule in role["rules"]:
                if "resourceNames" in rule:
                    assert rule["resourceNames"] == [peering_name]
                    assert rule["apiGroups"] == ["kopf.dev"] and rule["verbs"] == ["patch"]


def test_bindings_name_the_operators_service_account(rendered: dict[str, list[Json]]) -> None:
    for documents in rendered.values():
        account = one(documents, "Deployment")["spec"]["template"]["spec"]["serviceAccountName"]
        for binding in [*of_kind(documents, "ClusterRoleBinding"), *of_kind(documents, "RoleBinding")]:
            assert [s["name"] for s in binding["subjects"]] == [account]
            role_kind = "ClusterRole" if binding["kind"] == "ClusterRoleBinding" else "Role"
            assert binding["roleRef"]["kind"] == role_kind


def test_the_derivation_sees_handlers_framework_and_client() -> None:
    """A guard on the derivation itself: a selector that silently resolved to nothing would grant less."""
    standalone = {access for access, _ in required(["--standalone"])}
    assert {
        Access("", "pods", "watch"),
        Access("", "nodes", "list"),
        Access("", "events", "create"),
    } <= standalone
    assert Access("smoothscale.io", "streamsapps", "patch") in standalone  # the daemon's finalizer
    assert standalone >= CLIENT_ACCESS
    assert not any(access.group == "kopf.dev" for access in standalone)
    peered = {access for access, _ in required(["--peering", "x"])} - standalone
    assert peered == {Access("kopf.dev", "clusterkopfpeerings", verb) for verb in ("list", "watch", "patch")}
