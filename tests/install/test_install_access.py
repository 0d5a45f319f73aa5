"""The operator's access table: how requests are classified, and that undeclared ones are refused."""

from __future__ import annotations

import pytest

from smoothscale.operator.access import CLIENT_ACCESS, Access, UndeclaredAccessError, check, request_accesses
from smoothscale.operator.appref import AppRef
from smoothscale.operator.kube import core_path, group_path


@pytest.mark.parametrize(
    ("method", "path", "params", "expected"),
    [
        ("GET", core_path("ns", "configmaps", "orders-assignment"), None, Access("", "configmaps", "get")),
        ("GET", core_path("ns", "pods"), None, Access("", "pods", "list")),
        ("GET", core_path("ns", "pods"), {"watch": "true"}, Access("", "pods", "watch")),
        ("POST", core_path("ns", "pods"), None, Access("", "pods", "create")),
        ("PATCH", core_path("ns", "pods", "orders-1"), None, Access("", "pods", "patch")),
        ("PUT", core_path("ns", "pods", "orders-1"), None, Access("", "pods", "update")),
        ("DELETE", core_path("ns", "pods", "orders-1"), None, Access("", "pods", "delete")),
        ("DELETE", core_path("ns", "pods"), None, Access("", "pods", "deletecollection")),
        (
            "PATCH",
            group_path("smoothscale.io/v1alpha1", "ns", "streamsapps", "orders", "status"),
            None,
            Access("smoothscale.io", "streamsapps/status", "patch"),
        ),
        ("GET", "/api/v1/nodes", None, Access("", "nodes", "list")),
        ("GET", "/api/v1/namespaces/ns", None, Access("", "namespaces", "get")),
        (
            "GET",
            "/apis/kopf.dev/v1/clusterkopfpeerings/x",
            None,
            Access("kopf.dev", "clusterkopfpeerings", "get"),
        ),
    ],
)
def test_requests_are_classified_as_rbac_sees_them(
    method: str, path: str, params: dict[str, str] | None, expected: Access
) -> None:
    assert list(request_accesses(method, path, params)) == [expected]


def test_a_create_blocking_its_owners_deletion_needs_the_owners_finalizers() -> None:
    owned = {"metadata": {"ownerReferences": [AppRef("ns", "orders", "u-1").owner_reference()]}}
    assert list(request_accesses("POST", core_path("ns", "pods"), body=owned)) == [
        Access("", "pods", "create"),
        Access("smoothscale.io", "streamsapps/finalizers", "update"),
    ]
    foreign = {
        "metadata": {"ownerReferences": [{"apiVersion": "v1", "kind": "Node", "blockOwnerDeletion": True}]}
    }
    with pytest.raises(UndeclaredAccessError, match="unknown kind: Node"):
        list(request_accesses("POST", core_path("ns", "pods"), body=foreign))


def test_declared_requests_pass_and_others_are_refused_before_sending() -> None:
    check("PATCH", core_path("ns", "configmaps", "orders-assignment"))
    with pytest.raises(UndeclaredAccessError, match=r"delete configmaps\.core: declare it"):
        check("DELETE", core_path("ns", "configmaps", "orders-assignment"))
    with pytest.raises(UndeclaredAccessError, match="not a resource path"):
        check("GET", "/version")


def test_every_declared_access_names_a_verb_rbac_knows() -> None:
    verbs = {"get", "list", "watch", "create", "update", "patch", "delete", "deletecollection"}
    assert {access.verb for access in CLIENT_ACCESS} <= verbs
