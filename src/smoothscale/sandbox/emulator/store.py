"""The emulator's object state machine: create, update, delete, garbage-collect, and record watch events.

It keeps objects in kmock's own `ObjectsArray` (so `emulator.objects[...]` assertions keep working) but owns
the rules kmock 0.8 lacks: server-owned metadata, a cluster-wide resourceVersion, optimistic concurrency,
status-subresource isolation, `generation`, finalizers and ownerReference garbage collection.

Every method is synchronous on purpose: with one event loop and no `await` inside, each operation is atomic,
so no lock is needed and the resourceVersion order always equals the order of events in the logs.
"""

from __future__ import annotations

import collections
import copy
from collections.abc import Callable, Iterator, Mapping
from typing import Any

import kmock

from . import errors
from .objects import (
    INITIAL_STATUS,
    desired_state,
    generate_name,
    keep_server_owned,
    metadata_of,
    new_uid,
    now_rfc3339,
    pod_spec_change_problem,
    with_status_of,
    without_resource_version,
)
from .scale import ScalePaths
from .selectors import ObjectFilter
from .watchlog import EventLog, StoredEvent

ObjectKey = tuple[kmock.resource, str | None, str]
Change = Callable[[dict[str, Any]], dict[str, Any]]

NAMESPACES = kmock.resource(group="", version="v1", plural="namespaces")
PODS = kmock.resource(group="", version="v1", plural="pods")


class ObjectStore:
    """All stored objects and their history of changes; see the module docstring for the rules."""

    def __init__(
        self,
        objects: kmock.ObjectsArray,
        resources: kmock.ResourcesArray,
        scale_paths: Mapping[kmock.resource, ScalePaths],
        *,
        event_window: int,
        object_history: int,
        deleted_retention: int,
    ) -> None:
        self._objects = objects
        self._resources = resources
        self._scale_paths = scale_paths
        self._event_window = event_window
        self._object_history = max(1, object_history)
        self._deleted_retention = deleted_retention
        self._resource_version = 0
        self._logs: dict[kmock.resource, EventLog] = {}
        self._deleted: collections.deque[ObjectKey] = collections.deque()
        # uid -> propagationPolicy of deletes that wait for finalizers.
        self._deferred_policies: dict[str, str] = {}

    # -- kinds -------------------------------------------------------------------------------------------

    @property
    def resource_version(self) -> int:
        """The latest resourceVersion handed out, cluster-wide (what a list response reports)."""
        return self._resource_version

    def info(self, resource: kmock.resource) -> kmock.ResourceInfo:
        """The registered kind, or 404 as a real server answers for unknown resources."""
        if resource.plural is None or resource not in self._resources:
            raise errors.not_found(resource.group, resource.plural, None)
        return self._resources[resource]

    def type_meta(self, resource: kmock.resource) -> tuple[str, str]:
        """(`apiVersion`, `kind`) of the objects of a resource."""
        info = self.info(resource)
        api_version = f"{resource.group}/{resource.version}" if resource.group else f"{resource.version}"
        return api_version, info.kind or (resource.plural or "").capitalize()

    def scale_paths(self, resource: kmock.resource) -> ScalePaths:
        return self._scale_paths.get(resource, ScalePaths())

    def log(self, resource: kmock.resource) -> EventLog:
        if resource not in self._logs:
            self._logs[resource] = EventLog(self._event_window)
        return self._logs[resource]

    def wake_all(self) -> None:
        """Wake all waiting watchers, e.g. so that they notice the server is closing."""
        for log in self._logs.values():
            log.wake()

    # -- reading -----------------------------------------------------------------------------------------

    def find(self, resource: kmock.resource, namespace: str | None, name: str) -> dict[str, Any] | None:
        key = (resource, namespace, name)
        if key not in self._objects:
            return None
        entry = self._objects[key]
        return None if entry.deleted else entry.last.raw

    def get(self, resource: kmock.resource, namespace: str | None, name: str) -> dict[str, Any]:
        found = self.find(resource, self.scope(resource, namespace), name)
        if found is None:
            raise errors.not_found(resource.group, resource.plural, name)
        return found

    def live(self) -> Iterator[tuple[ObjectKey, dict[str, Any]]]:
        """All existing objects of all kinds (a snapshot: safe to modify the store while iterating)."""
        for key, entry in list(self._objects.items()):
            if not entry.deleted:
                yield key, entry.last.raw

    def select(self, resource: kmock.resource, where: ObjectFilter) -> list[dict[str, Any]]:
        """Existing objects of a kind that pass the filter, ordered by namespace and name (as etcd lists)."""
        self.info(resource)
        found = []
        for (res, namespace, name), entry in list(self._objects.items()):
            if res != resource or (where.namespace is not None and namespace != where.namespace):
                continue
            # The latest version, None once deleted: kmock's `last` walks the history in Python, which made
            # lists most of a busy emulator's time (an operator lists each app's pods every round).
            history = entry.history
            latest = history[-1] if len(history) else None
            if latest is not None and where.matches(obj := latest.raw):
                found.append((namespace or "", name, obj))
        found.sort(key=lambda item: (item[0], item[1]))
        return [obj for _, _, obj in found]

    # -- writing -----------------------------------------------------------------------------------------

    def create(
        self, resource: kmock.resource, namespace: str | None, body: Any, *, dry_run: bool = False
    ) -> dict[str, Any]:
        """POST: fill server-owned metadata, honour `generateName`, refuse duplicates with AlreadyExists.

        With `dry_run` (`?dryRun=All`, used by `kubectl diff` and `--dry-run=server`), nothing is stored.
        """
        info = self.info(resource)
        if not isinstance(body, Mapping):
            raise errors.bad_request("the body of the request must be a JSON object")
        obj = copy.deepcopy(dict(body))
        metadata = metadata_of(obj)

        body_namespace = metadata.get("namespace")
        if info.namespaced:
            if namespace and body_namespace and body_namespace != namespace:
                raise errors.bad_request(
                    "the namespace of the provided object does not match the namespace sent on the request"
                )
            namespace = namespace or body_namespace or "default"
            metadata["namespace"] = namespace
        else:
            namespace = None
            metadata.pop("namespace", None)

        name = metadata.get("name")
        if not name:
            prefix = metadata.get("generateName")
            if not prefix:
                raise errors.invalid(
                    resource.group,
                    resource.plural,
                    None,
                    "metadata.name: Required value: name or generateName is required",
                )
            name = generate_name(
                prefix, lambda candidate: self.find(resource, namespace, candidate) is not None
            )
            if name is None:
                raise errors.already_exists(resource.group, resource.plural, prefix)
        elif self.find(resource, namespace, name) is not None:
            raise errors.already_exists(resource.group, resource.plural, name)

        for field in ("deletionTimestamp", "deletionGracePeriodSeconds", "resourceVersion"):
            metadata.pop(field, None)
        metadata.update(
            name=name,
            uid=new_uid(),
            creationTimestamp=now_rfc3339(),
            generation=1,
            resourceVersion=str(self._next_resource_version()),
        )
        obj["metadata"] = metadata
        obj["apiVersion"], obj["kind"] = self.type_meta(resource)
        if "status" in info.subresources:
            # As for CRDs with the status subresource: status is not settable on create (only via /status).
            obj.pop("status", None)
            if obj["kind"] in INITIAL_STATUS:
                obj["status"] = copy.deepcopy(INITIAL_STATUS[obj["kind"]])
        if not dry_run:
            self._commit(resource, namespace, name, obj, "ADDED", None)
        return obj

    def update(
        self,
        resource: kmock.resource,
        namespace: str | None,
        name: str,
        change: Change,
        *,
        subresource: str | None = None,
        dry_run: bool = False,
    ) -> dict[str, Any]:
        """PATCH/PUT: apply `change` to a copy, check the precondition, keep what the target may not touch.

        - a stale `metadata.resourceVersion` left in the changed object means 409 Conflict;
        - on the main resource `.status` changes are ignored when the kind has a status subresource;
          on `/status` everything but `.status` is ignored;
        - server-owned metadata never changes; `generation` grows when the desired state changes;
        - an unchanged object is not written (no new resourceVersion, no event), as in a real server;
        - releasing the last finalizer of an object being deleted deletes it;
        - a pod's spec is fixed, but for what kube-apiserver lets change (`pod_spec_change_problem`).
        """
        info = self.info(resource)
        self._check_subresource(resource, info, subresource)
        return self._update(resource, namespace, name, change, subresource=subresource, dry_run=dry_run)

    def bind(self, namespace: str | None, name: str, node: str) -> None:
        """`pods/binding`: put a pod on a node, once, as a scheduler does (its only way onto one)."""

        def change(old: dict[str, Any]) -> dict[str, Any]:
            current = (old.get("spec") or {}).get("nodeName")
            if current:
                raise errors.api_error(
                    409,
                    "Conflict",
                    f'Operation cannot be fulfilled on pods/binding "{name}": '
                    f'pod {name} is already assigned to node "{current}"',
                    {"name": name, "kind": "pods/binding"},
                )
            return {**old, "spec": {**(old.get("spec") or {}), "nodeName": node}}

        self._update(PODS, namespace, name, change, subresource="binding")

    def _update(
        self,
        resource: kmock.resource,
        namespace: str | None,
        name: str,
        change: Change,
        *,
        subresource: str | None,
        dry_run: bool = False,
    ) -> dict[str, Any]:
        info = self.info(resource)
        namespace = self.scope(resource, namespace)
        old = self.get(resource, namespace, name)
        candidate = change(copy.deepcopy(old))

        expected = metadata_of(candidate).get("resourceVersion")
        if expected not in (None, "") and str(expected) != metadata_of(old).get("resourceVersion"):
            raise errors.conflict(resource.group, resource.plural, name)

        if subresource == "status":
            new = with_status_of(candidate, copy.deepcopy(old))
        elif subresource is None and "status" in info.subresources:
            new = with_status_of(old, candidate)
        else:
            new = candidate
        new = keep_server_owned(old, new)
        if resource == PODS and subresource is None:
            problem = pod_spec_change_problem(name, old, new)
            if problem is not None:
                raise errors.invalid(resource.group, resource.plural, name, problem)

        old_metadata, new_metadata = metadata_of(old), metadata_of(new)
        if old_metadata.get("deletionTimestamp"):
            added = set(new_metadata.get("finalizers") or []) - set(old_metadata.get("finalizers") or [])
            if added:
                raise errors.invalid(
                    resource.group,
                    resource.plural,
                    name,
                    "metadata.finalizers: Forbidden: no new finalizers can be added "
                    f"if the object is being deleted, found new finalizers {sorted(added)}",
                )
        if without_resource_version(new) == without_resource_version(old):
            return old

        if desired_state(new) != desired_state(old):
            new_metadata["generation"] = int(old_metadata.get("generation") or 0) + 1
        new_metadata["resourceVersion"] = str(self._next_resource_version())
        new["metadata"] = new_metadata
        if dry_run:
            return new
        self._commit(resource, namespace, name, new, "MODIFIED", old)

        if new_metadata.get("deletionTimestamp") and not new_metadata.get("finalizers"):
            policy = self._deferred_policies.pop(str(new_metadata.get("uid")), "Background")
            return self._remove(resource, namespace, name, new, policy)
        return new

    def delete(
        self,
        resource: kmock.resource,
        namespace: str | None,
        name: str,
        options: Mapping[str, Any] | None = None,
        *,
        dry_run: bool = False,
    ) -> dict[str, Any]:
        """DELETE: with finalizers, mark (deletionTimestamp) and keep; else remove and collect dependents."""
        self.info(resource)
        namespace = self.scope(resource, namespace)
        old = self.get(resource, namespace, name)
        old_metadata = metadata_of(old)
        options = options or {}

        preconditions = options.get("preconditions") or {}
        for field in ("uid", "resourceVersion"):
            if preconditions.get(field) and str(preconditions[field]) != str(old_metadata.get(field)):
                raise errors.conflict(resource.group, resource.plural, name)
        policy = str(
            options.get("propagationPolicy")
            or ("Orphan" if options.get("orphanDependents") else "Background")
        )

        if dry_run:
            return old
        if not old_metadata.get("finalizers"):
            return self._remove(resource, namespace, name, old, policy)
        if old_metadata.get("deletionTimestamp"):
            return old  # already being deleted: waiting for the finalizers
        self._deferred_policies[str(old_metadata.get("uid"))] = policy
        new = copy.deepcopy(old)
        new_metadata = metadata_of(new)
        new_metadata.update(
            deletionTimestamp=now_rfc3339(),
            deletionGracePeriodSeconds=0,
            resourceVersion=str(self._next_resource_version()),
        )
        new["metadata"] = new_metadata
        self._commit(resource, namespace, name, new, "MODIFIED", old)
        return new

    # -- internals ---------------------------------------------------------------------------------------

    def _next_resource_version(self) -> int:
        self._resource_version += 1
        return self._resource_version

    def scope(self, resource: kmock.resource, namespace: str | None) -> str | None:
        """Cluster-scoped objects are stored without a namespace whatever the URL says."""
        return namespace if self.info(resource).namespaced else None

    def _check_subresource(
        self, resource: kmock.resource, info: kmock.ResourceInfo, subresource: str | None
    ) -> None:
        if subresource is not None and (
            subresource not in ("status", "scale") or subresource not in info.subresources
        ):
            raise errors.not_found(resource.group, f"{resource.plural}/{subresource}", None)

    def _commit(
        self,
        resource: kmock.resource,
        namespace: str | None,
        name: str,
        obj: dict[str, Any],
        event_type: str,
        old: dict[str, Any] | None,
    ) -> None:
        key = (resource, namespace, name)
        if key in self._objects:
            entry = self._objects[key]
            entry.create(obj)  # kmock's way to append a version, whether the object existed or not
            if len(entry.history) > self._object_history:
                del entry.history[: -self._object_history]
        else:
            self._objects[key] = obj
        version = int(obj["metadata"]["resourceVersion"])
        self.log(resource).append(StoredEvent(version, event_type, obj, old))

    def _remove(
        self, resource: kmock.resource, namespace: str | None, name: str, last: dict[str, Any], policy: str
    ) -> dict[str, Any]:
        """Delete for real: a DELETED event with a new resourceVersion, then dependents (unless orphaned)."""
        final = dict(last)
        final_metadata = metadata_of(last)
        final_metadata["resourceVersion"] = str(self._next_resource_version())
        final["metadata"] = final_metadata
        key = (resource, namespace, name)
        self._objects[key].delete()
        self.log(resource).append(StoredEvent(int(final_metadata["resourceVersion"]), "DELETED", final, None))
        self._forget_deleted(key)
        if policy != "Orphan":
            self._collect_dependents(resource, final)
        return final

    def _forget_deleted(self, key: ObjectKey) -> None:
        """Soft-deleted objects keep their history for assertions, but only the most recent ones."""
        self._deleted.append(key)
        while len(self._deleted) > self._deleted_retention:
            oldest = self._deleted.popleft()
            if oldest in self._objects and self._objects[oldest].deleted:
                del self._objects[oldest]

    def _collect_dependents(self, owner_resource: kmock.resource, owner: dict[str, Any]) -> None:
        """Background garbage collection: delete what this owner owned, and a namespace's contents.

        A dependent with another owner that still exists is kept, as the real garbage collector does.
        Dependents with finalizers are only marked for deletion, and their own dependents go when they go.
        """
        owner_metadata = metadata_of(owner)
        owner_uid = owner_metadata.get("uid")
        owner_namespace = owner_metadata.get("namespace")
        is_namespace = owner_resource == NAMESPACES
        snapshot = list(self.live())
        live_uids = {metadata_of(obj).get("uid") for _, obj in snapshot}
        victims: list[ObjectKey] = []
        for key, obj in snapshot:
            _, namespace, _ = key
            if is_namespace:
                if namespace == owner_metadata.get("name"):
                    victims.append(key)
                continue
            references = metadata_of(obj).get("ownerReferences") or []
            if not any(ref.get("uid") == owner_uid for ref in references):
                continue
            if owner_namespace is not None and namespace != owner_namespace:
                continue  # a namespaced owner cannot own objects in other namespaces
            if any(ref.get("uid") != owner_uid and ref.get("uid") in live_uids for ref in references):
                continue
            victims.append(key)
        for resource, namespace, name in victims:
            if self.find(resource, namespace, name) is not None:
                self.delete(resource, namespace, name)
