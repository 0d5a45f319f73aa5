"""Who owns the app's state claims, as `spec.storage.retentionPolicy.whenDeleted` asks.

A claim owned by its app goes with it (Kubernetes' garbage collector); a claim with no owner outlives it,
and a StreamsApp of the same name created again mounts it by its name (`<app>-state-<ordinal>`), so its
pods find their state. New claims are made with the owner the policy asks for (`podset.claim_owners`);
this module brings the claims that already exist in line: when the app's loop starts (claims an older
operator made, always owned; claims a deleted app of the same name left behind, which a `Delete` policy
now adopts) and whenever the policy changes. A steady app costs no request.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from smoothscale.control import object_names
from smoothscale.resource import StorageSpec, api_kind

from .appref import AppRef
from .kube import KubeClient, KubeError, core_path
from .podset import claim_owners


def owners_patch(claim: Mapping[str, Any], owners: list[dict[str, Any]]) -> dict[str, Any] | None:
    """The merge patch that gives `claim` the StreamsApp owners `owners` (its other owners kept), or None
    when it has them already."""
    found = list((claim.get("metadata") or {}).get("ownerReferences") or [])
    others = [ref for ref in found if not _is_streamsapp(ref)]
    wanted = others + owners
    if [_key(ref) for ref in found] == [_key(ref) for ref in wanted]:
        return None
    return {"metadata": {"ownerReferences": wanted}}


def _is_streamsapp(ref: Mapping[str, Any]) -> bool:
    return ref.get("kind") == api_kind.KIND and ref.get("apiVersion") == api_kind.API_VERSION


def _key(ref: Mapping[str, Any]) -> tuple[object, ...]:
    return (ref.get("apiVersion"), ref.get("kind"), ref.get("uid"))


class ClaimOwnership:
    """Keeps the owners of the app's claims as the policy in force says."""

    def __init__(self, app: AppRef, api: KubeClient) -> None:
        self.app = app
        self.api = api
        self._kept: bool | None = None
        """`deletes_with_app` of the policy the claims were last brought in line with (None: not yet)."""

    async def keep(self, storage: StorageSpec | None) -> None:
        if storage is None or storage.deletes_with_app == self._kept:
            return
        path = core_path(self.app.namespace, "persistentvolumeclaims")
        listed = await self.api.get(path, {"labelSelector": f"{object_names.APP_LABEL}={self.app.name}"})
        owners = claim_owners(self.app, storage)
        for claim in listed.get("items") or []:
            patch = owners_patch(claim, owners)
            if patch is None:
                continue
            try:
                await self.api.patch(f"{path}/{claim['metadata']['name']}", patch)
            except KubeError as error:
                if not error.not_found:
                    raise
        self._kept = storage.deletes_with_app
