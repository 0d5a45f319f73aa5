"""The pods' Leases (`spec.failover.leaseSeconds`, docs/failover.md): the renewals the operator reads, and its
take of an expired one.

Each pod of an app with a lease renews a `coordination.k8s.io/v1` Lease named `pod_lease(pod)`, labelled with
the app, holding it itself (`spec.holderIdentity`: the pod's name), with a replace conditional on the
resourceVersion it last saw. For the operator a renewal is a change of that resourceVersion while the pod
holds the Lease (`renewals`): the control step times it by the operator's own clock (`control.failover`).

The take linearizes a pod's late renewal and the operator's promotion through the API server, as client-go's
leader election does: before the operator publishes a generation after a pod's lease expired, it replaces the
pod's Lease conditionally on the resourceVersion it last saw held by the pod, emptying the holder and
annotating the generation in force (`TAKEN_AT_GENERATION_ANNOTATION`). A 409 means the pod renewed first: it
did not stop, so nothing may be published on the expiry (`AppLeases.take` says which pod kept its Lease). A
Lease that is gone is created taken; a 409 there means the pod created it first, the same answer. A Lease
whose holder is empty (taken already) or another name is held by no pod: it is not taken again.

Which pods renew at all is a fact of each pod, not of the spec: a pod created before its app had a lease has
no `LEASE_SECONDS_ENV` and fences nothing, so it is never timed (`Observation.leased`), and a pod created with
a longer lease than the spec's now is timed by its own (`pod_lease_seconds`, the longest wins).
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from smoothscale.control import object_names

from .appref import AppRef
from .kube import KubeClient, KubeError, group_path

LEASE_API_VERSION = "coordination.k8s.io/v1"
WAITING = object_names.WAITING_FOR_GENERATION_ANNOTATION


def pod_lease_seconds(pod: Mapping[str, Any]) -> int | None:
    """The lease a pod object was created with (`LEASE_SECONDS_ENV` in one of its containers), or None: it
    renews no Lease."""
    spec = pod.get("spec") or {}
    found = [
        variable.get("value")
        for container in spec.get("containers") or []
        for variable in container.get("env") or []
        if variable.get("name") == object_names.LEASE_SECONDS_ENV
    ]
    seconds = [int(value) for value in found if isinstance(value, str) and value.isdigit()]
    return max(seconds) if seconds else None


def holder_of(lease: Mapping[str, Any]) -> str | None:
    """The Lease's holder (None: empty, as after the operator's take)."""
    return ((lease.get("spec") or {}).get("holderIdentity")) or None


def renewals_of(leases: Iterable[Mapping[str, Any]]) -> dict[str, str]:
    """Each pod's renewal token: the resourceVersion of its own Lease while it holds it (a Lease held by no
    one, or by another name, is no renewal)."""
    tokens = {}
    for lease in leases:
        metadata = lease.get("metadata") or {}
        holder = holder_of(lease)
        if holder is not None and metadata.get("name") == object_names.pod_lease(holder):
            tokens[holder] = str(metadata.get("resourceVersion") or "")
    return tokens


@dataclass(frozen=True)
class Take:
    """What a take did: the pods whose Lease the operator took now, and the pod that renewed (or recreated
    its Lease) first, if one did (then nothing may be published on its expiry; the take stopped there)."""

    taken: tuple[str, ...] = ()
    kept_by: str | None = None


class AppLeases:
    """One app's Leases as last listed (or written by the operator's takes), by name."""

    def __init__(self, app: AppRef, api: KubeClient) -> None:
        self.app = app
        self.api = api
        self._leases: dict[str, Mapping[str, Any]] = {}

    def _path(self, name: str | None = None) -> str:
        return group_path(LEASE_API_VERSION, self.app.namespace, "leases", name)

    async def renewals(self) -> dict[str, str]:
        """List the app's Leases (one request, by the app's label): each pod's renewal token."""
        selector = f"{object_names.LEASE_LABEL}={self.app.name}"
        listed = await self.api.get(self._path(), {"labelSelector": selector})
        items = listed.get("items") or []
        self._leases = {str((item.get("metadata") or {}).get("name")): item for item in items}
        return renewals_of(items)

    def waited_for(self) -> int:
        """The newest generation a pod that took its Lease back waits for (0: none waits): if the one in
        force is older, the take's generation was never published, and the pod processes nothing until one
        is (`WAITING_FOR_GENERATION_ANNOTATION`)."""
        waited = [
            int(value)
            for lease in self._leases.values()
            if (value := ((lease.get("metadata") or {}).get("annotations") or {}).get(WAITING)) is not None
            and str(value).isdigit()
            and holder_of(lease) is not None
        ]
        return max(waited, default=0)

    def held_by_its_pod(self, pod: str) -> bool | None:
        """Whether `pod`'s Lease, as last known, is held by the pod (None: there is none)."""
        lease = self._leases.get(object_names.pod_lease(pod))
        return None if lease is None else holder_of(lease) == pod

    async def take(
        self,
        pods: Collection[str],
        seen: Mapping[str, tuple[str | None, datetime]],
        generation: int,
        seconds: int,
    ) -> Take:
        """Take the Lease of each of `pods` (their leases expired) that its pod may still hold, in name order:
        a replace conditional on the token last seen (`seen`: the step's `Leases.seen`), holder emptied,
        annotated with `generation`; created taken when gone. Stops at the first pod that renewed first."""
        taken: list[str] = []
        for pod in sorted(pods):
            if self.held_by_its_pod(pod) is False:
                continue  # taken already (holder empty), or not the pod's
            token = seen.get(pod, (None, None))[0]
            try:
                written = await self._take_one(pod, token, generation, seconds)
            except KubeError as error:
                if error.conflict:
                    return Take(tuple(taken), pod)
                raise
            self._leases[object_names.pod_lease(pod)] = written
            taken.append(pod)
        return Take(tuple(taken))

    async def _take_one(self, pod: str, token: str | None, generation: int, seconds: int) -> dict[str, Any]:
        name = object_names.pod_lease(pod)
        listed = self._leases.get(name)
        if token is not None and listed is not None:
            body = _taken(listed, generation)
            body["metadata"]["resourceVersion"] = token
            try:
                return await self.api.replace(self._path(name), body)
            except KubeError as error:
                if not error.not_found:
                    raise
        # gone (or never seen): created taken; a 409 (AlreadyExists) is the pod's own, created first
        return await self.api.create(self._path(), self._new(name, generation, seconds))

    def _new(self, name: str, generation: int, seconds: int) -> dict[str, Any]:
        return {
            "apiVersion": LEASE_API_VERSION,
            "kind": "Lease",
            "metadata": {
                "name": name,
                "namespace": self.app.namespace,
                "labels": {object_names.LEASE_LABEL: self.app.name},
                "annotations": {object_names.TAKEN_AT_GENERATION_ANNOTATION: str(generation)},
                "ownerReferences": [self.app.owner_reference()],
            },
            "spec": {"holderIdentity": None, "leaseDurationSeconds": seconds},
        }


def _taken(lease: Mapping[str, Any], generation: int) -> dict[str, Any]:
    """`lease` as the operator's take writes it: no holder, the generation in force annotated."""
    metadata = dict(lease.get("metadata") or {})
    metadata["annotations"] = {
        **(metadata.get("annotations") or {}),
        object_names.TAKEN_AT_GENERATION_ANNOTATION: str(generation),
    }
    return {
        "apiVersion": LEASE_API_VERSION,
        "kind": "Lease",
        "metadata": metadata,
        "spec": {**(lease.get("spec") or {}), "holderIdentity": None},
    }
