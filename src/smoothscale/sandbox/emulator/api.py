"""`ExtendedEmulator`: kmock's `KubernetesEmulator` with the API-server behaviour our operator relies on.

What stays kmock's: the DSL (`emulator['patch', ...] << 500`), discovery of `/api` and `/apis`, the
`ObjectsArray` behind `emulator.objects`, the `resources` registry, and payload rendering (JSON bodies and
JSON-lines streams). What changes, and why (see NOTES.md for the list of gaps in kmock 0.8):

- request parsing: kmock cannot parse `/api/v1/namespaces[/<name>]` (see `paths.py`);
- dispatch: kmock re-filters the whole request history for every reaction on every request, which grows
  without bound in a long demo; here a reaction made of plain filters is checked against the one request,
  and the history kept for assertions is capped (`request_history`);
- state changes happen in the fallback handlers (in `ObjectStore`), not before dispatch as in kmock: a
  request answered by a user's reaction or an injected fault leaves the state unchanged, like a real server
  that failed it;
- every object operation follows the rules in `store.py`; watches follow `watch.py`; PUT, `/status`,
  `/scale`, collection deletes and list pagination are added.
"""

from __future__ import annotations

import base64
import binascii
import copy
import json
import re
from collections.abc import AsyncIterator, Mapping
from typing import Any

import aiohttp.web
import attrs
import kmock
import yaml

# Not re-exported by kmock 0.8 (mypy refuses implicit re-exports): its reaction protocol and response type.
from kmock._internal.rendering import ReactionMismatchError, Response, StreamingError

from . import errors, openapi, patches, tables
from .faults import FaultInjector
from .paths import parse_request
from .scale import ScalePaths, replicas_of, set_path, to_scale
from .selectors import ObjectFilter, SelectorError
from .store import ObjectStore
from .watch import WatchOptions, stream_events

JSON_HEADERS = {"Content-Type": "application/json"}
_SUBRESOURCE_VERBS = {"status": ["get", "patch", "update"], "scale": ["get", "patch", "update"]}
_DEFAULT_VERBS = ["create", "delete", "deletecollection", "get", "list", "patch", "update", "watch"]


@attrs.define(kw_only=True)
class ExtendedEmulator(kmock.KubernetesEmulator):
    """An in-memory Kubernetes API server for tests and the demo; serve it with `serve_emulator()`.

    Tunables: `bookmark_interval` (seconds between BOOKMARK events of a watch that asked for them),
    `event_window` (events kept per kind for watch resumption; older resourceVersions get 410),
    `request_history` (requests kept for kmock assertions; None keeps all), `object_history` (versions kept
    per object in `emulator.objects[...].history`), `deleted_retention` (deleted objects kept for assertions).
    """

    bookmark_interval: float = 5.0
    event_window: int = 100  # as kube-apiserver's default watch cache size per resource
    request_history: int | None = 1000
    object_history: int = 8
    deleted_retention: int = 2000
    faults: FaultInjector = attrs.field(factory=FaultInjector)
    scale_paths: dict[kmock.resource, ScalePaths] = attrs.field(factory=dict)
    printer_columns: dict[kmock.resource, list[dict[str, Any]]] = attrs.field(factory=dict)
    """A kind's `additionalPrinterColumns` (as in its CRD), for the Tables kubectl asks for."""
    schemas: dict[kmock.resource, dict[str, Any]] = attrs.field(factory=dict)
    """A kind's OpenAPI v3 schema (its CRD's `openAPIV3Schema`), served for `kubectl explain`."""

    _store: ObjectStore = attrs.field(init=False)
    _closing: bool = attrs.field(default=False, init=False)
    _served: int = attrs.field(default=0, init=False)

    def __attrs_post_init__(self) -> None:
        super().__attrs_post_init__()
        self._store = ObjectStore(
            self.objects,
            self.resources,
            self.scale_paths,
            event_window=self.event_window,
            object_history=self.object_history,
            deleted_retention=self.deleted_retention,
        )
        # A sub-priority above kmock's own fallbacks for the same actions: a watch needs its content type set
        # on the response (kubectl refuses octet-streams), which kmock's `_serve_watch` signature cannot do.
        (self.fallback**1)[kmock.action.WATCH] << self._serve_watch_response
        self.fallback[kmock.method.PUT] << self._serve_replace
        self.fallback["get /version/"] << self._serve_server_version  # the `kubernetes` client's spelling
        self.fallback["get /openapi/v3"] << self._serve_openapi_index
        self.fallback["get", re.compile(r"/openapi/v3/apis?/.+")] << self._serve_openapi_document
        self.fallback[kmock.method.DELETE][self._is_collection_request] << self._serve_delete_collection
        (
            self.fallback["post", re.compile(r"/api/v1/namespaces/[^/]+/pods/[^/]+/binding/?$")]
            << self._serve_binding
        )

    # -- public helpers ----------------------------------------------------------------------------------

    @property
    def store(self) -> ObjectStore:
        """The state behind the API, to seed and inspect without HTTP (from the serving thread only)."""
        return self._store

    @property
    def resource_version(self) -> int:
        return self._store.resource_version

    def create_object(self, resource: str | kmock.resource, body: Mapping[str, Any]) -> dict[str, Any]:
        """Create an object as a POST would (watchers are notified); for seeding before or while serving."""
        res = resource if isinstance(resource, kmock.resource) else kmock.resource(resource)
        namespace = (body.get("metadata") or {}).get("namespace")
        return self._store.create(res, namespace, body)

    def close_watches(self) -> None:
        """End every watch stream now and every new one at once, so that the HTTP server can stop quickly."""
        self._closing = True
        self._store.wake_all()

    def reopen(self) -> None:
        """Serve watch streams again after `close_watches()` (for an emulator served a second time)."""
        self._closing = False

    # -- request entry and dispatch ----------------------------------------------------------------------

    async def __call__(self, raw_request: aiohttp.web.BaseRequest) -> aiohttp.web.StreamResponse:
        """kmock's entry point with our parser: Kubernetes failures are answers, not emulator errors."""
        raw_response: aiohttp.web.StreamResponse | None = None
        try:
            if self.limit is not None and self._served >= self.limit:
                raise errors.api_error(429, "TooManyRequests", "the emulator's request limit is reached")
            request = await parse_request(raw_request, request_id=self._served)
            self._served += 1
            self._remember(request)
            try:
                return await self._handle(request)
            except StreamingError as exc:
                raw_response = exc.args[0]
                raise exc.__cause__ or exc from None
        except Exception as exc:
            if not isinstance(exc, kmock.KubernetesError) and self._errors:
                self._errors[-1][:] = [*self._errors[-1][-99:], exc]  # kmock's strict mode re-raises these
            if raw_response is None or not raw_response.prepared:
                return await self._render_error(exc)
            await self._stream_error(exc, raw_response)
            await raw_response.write_eof()
            return raw_response

    async def _handle(self, request: kmock.Request) -> aiohttp.web.StreamResponse:
        """kmock's dispatch (reactions by priority, then order), with injected faults first."""
        await self.faults.intercept(request)
        for reaction in self._reactions_by_priority():
            if reaction._disabled.is_set() or not self._sees(reaction._source, request):
                continue
            try:
                return await reaction(request)
            except ReactionMismatchError:  # a depleted or mismatching reaction: never again
                reaction._disabled.set()
            except NotImplementedError:  # matched, but nothing to respond with
                pass
        raise errors.not_found(None, request.url.path, None)

    def _reactions_by_priority(self) -> list[kmock.Reaction]:
        """Highest priority first; equal priorities in registration order (the same order as kmock's)."""
        keys = [reaction.priorities for reaction in self._payloads]
        depth = max((len(key) for key in keys), default=0)
        padded = [tuple(-p for p in key) + (0,) * (depth - len(key)) for key in keys]
        order = sorted(range(len(keys)), key=lambda index: padded[index])
        return [self._payloads[index] for index in order]

    def _sees(self, view: kmock.View, request: kmock.Request) -> bool:
        """Does the request reach this view? Plain filter chains are checked on this request alone."""
        while True:
            if view is self:
                return True
            if type(view) is kmock.Priority:
                view = view._source
            elif type(view) is kmock.Filter:
                if not view.criteria(request):
                    return False
                view = view._source
            else:
                return request in view  # slices, groups, streams: kmock's exact (history-based) semantics

    def _remember(self, request: kmock.Request) -> None:
        """Keep the request for kmock assertions, trimming old ones (and the reactions' copies) in batches."""
        self._requests.append(request)
        limit = self.request_history
        if limit is not None and len(self._requests) > 2 * limit:
            del self._requests[:-limit]
            for reaction in self._payloads:
                del reaction._requests[:-limit]

    async def _render_error(self, exc: Exception) -> aiohttp.web.StreamResponse:
        """A `Status` body like kube-apiserver's (kmock adds a traceback that clients would show to users)."""
        if isinstance(exc, kmock.KubernetesError):
            details = exc.details if isinstance(exc.details, dict) else None
            body = errors.status_body(exc.status, exc.reason or "Failure", exc.message or repr(exc), details)
            return aiohttp.web.json_response(body, status=exc.status)
        return aiohttp.web.json_response(errors.status_body(500, "InternalError", repr(exc)), status=500)

    async def _stream_error(self, exc: Exception, raw_response: aiohttp.web.StreamResponse) -> None:
        code = exc.status if isinstance(exc, kmock.KubernetesError) else 500
        body = errors.status_body(code, getattr(exc, "reason", None) or "InternalError", repr(exc))
        await raw_response.write(json.dumps({"type": "ERROR", "object": body}).encode() + b"\n")

    # -- discovery ---------------------------------------------------------------------------------------

    async def _serve_version(self, request: kmock.Request) -> kmock.Payload:
        """`/api/v1` and `/apis/<group>/<version>`: kmock's list, with the core groupVersion spelled `v1` and
        subresources described as kube-apiserver does (`/scale` is an `autoscaling/v1` `Scale`)."""
        assert request.resource is not None
        group, version = request.resource.group, request.resource.version
        found = [r for r in self._get_resources() if r.group == group and r.version == version and r.plural]
        if not found:
            raise errors.not_found(group, f"{version}", None)
        entries: list[dict[str, Any]] = []
        for resource in sorted(found, key=lambda r: str(r.plural)):
            info = self.resources[resource]
            plural = str(resource.plural)
            kind = info.kind or plural.capitalize()
            entries.append(
                {
                    "name": plural,
                    "singularName": info.singular or kind.lower(),
                    "namespaced": bool(info.namespaced),
                    "kind": kind,
                    "verbs": sorted(info.verbs) or _DEFAULT_VERBS,
                    "shortNames": sorted(info.shortnames),
                    "categories": sorted(info.categories),
                }
            )
            for sub in sorted(info.subresources):
                entry: dict[str, Any] = {
                    "name": f"{plural}/{sub}",
                    "singularName": "",
                    "namespaced": bool(info.namespaced),
                    "kind": "Scale" if sub == "scale" else kind,
                    "verbs": _SUBRESOURCE_VERBS.get(sub, ["get"]),
                }
                if sub == "scale":
                    entry.update(group="autoscaling", version="v1")
                entries.append(entry)
        group_version = f"{group}/{version}" if group else f"{version}"
        return {
            "kind": "APIResourceList",
            "apiVersion": "v1",
            "groupVersion": group_version,
            "resources": entries,
        }

    async def _serve_openapi_index(self, request: kmock.Request) -> kmock.Payload:
        return openapi.index(self._get_resources())

    async def _serve_openapi_document(self, request: kmock.Request) -> kmock.Payload:
        parts = request.url.path.removeprefix("/openapi/v3/").split("/")
        group, version = ("", parts[1]) if parts[0] == "api" else (parts[1], parts[-1])
        kinds = [
            (res, self.resources[res])
            for res in self._get_resources()
            if res.group == group and res.version == version and res.plural
        ]
        if len(parts) not in (2, 3) or not kinds:
            raise errors.not_found(group, version, None)
        return openapi.document(group, version, kinds, self.schemas)

    # -- reading -----------------------------------------------------------------------------------------

    async def _serve_fetch(self, request: kmock.Request) -> kmock.Payload:
        resource, name = self._object_of(request)
        info = self._store.info(resource)
        obj = self._store.get(resource, request.namespace, name)
        if request.subresource is None and tables.wants_table(request.headers):
            metadata = {"resourceVersion": obj["metadata"]["resourceVersion"]}
            return tables.table([obj], self._columns(resource), metadata)
        if request.subresource is None or (request.subresource == "status" and "status" in info.subresources):
            return obj
        if request.subresource == "scale" and "scale" in info.subresources:
            return to_scale(obj, self._store.scale_paths(resource))
        raise errors.not_found(resource.group, f"{resource.plural}/{request.subresource}", name)

    async def _serve_list(self, request: kmock.Request) -> kmock.Payload:
        """A `<Kind>List` with the list's resourceVersion, filtered by selectors, paginated by `limit`."""
        resource = self._resource_of(request)
        where = self._filter_of(request)
        api_version, kind = self._store.type_meta(resource)
        resource_version = self._store.resource_version
        items = self._store.select(resource, where)
        metadata: dict[str, Any] = {"resourceVersion": str(resource_version)}

        token = request.params.get("continue")
        if token:
            after = _decode_continue(token)
            items = [obj for obj in items if _list_key(obj) > after]
        limit = _int_param(request.params, "limit")
        if limit and len(items) > limit:
            metadata["remainingItemCount"] = len(items) - limit
            items = items[:limit]
            metadata["continue"] = _encode_continue(_list_key(items[-1]))
        if tables.wants_table(request.headers):
            return tables.table(items, self._columns(resource), metadata)
        return {"apiVersion": api_version, "kind": f"{kind}List", "metadata": metadata, "items": items}

    def _columns(self, resource: kmock.resource) -> list[tables.Column]:
        """A Table's columns: the kind's printer columns, the usual ones of a built-in, or NAME and AGE."""
        columns = self.printer_columns.get(resource)
        if columns is not None:
            return tables.crd_columns(columns)
        kind = self._store.type_meta(resource)[1]
        return tables.BUILTIN.get(kind, [tables.NAME, tables.AGE])

    async def _serve_watch_response(self, request: kmock.Request) -> kmock.Payload:
        """Validate the watch before the stream starts (400s are plain answers), then stream JSON lines."""
        resource = self._resource_of(request)
        options = WatchOptions.from_query(self._filter_of(request), request.params)
        events = self._stream(request, resource, options)
        return Response(headers=JSON_HEADERS, payload=events)

    async def _serve_watch(self, request: kmock.Request) -> AsyncIterator[kmock.Payload]:
        """kmock's watch fallback (shadowed by `_serve_watch_response`; kept for direct callers)."""
        resource = self._resource_of(request)
        options = WatchOptions.from_query(self._filter_of(request), request.params)
        async for item in self._stream(request, resource, options):
            yield item

    def _stream(
        self, request: kmock.Request, resource: kmock.resource, options: WatchOptions
    ) -> AsyncIterator[kmock.Payload]:
        raw = request._raw_request

        def is_over() -> bool:
            transport = raw.transport if raw is not None else None
            return self._closing or (raw is not None and (transport is None or transport.is_closing()))

        return stream_events(
            self._store, resource, options, bookmark_interval=self.bookmark_interval, is_over=is_over
        )

    # -- writing -----------------------------------------------------------------------------------------

    async def _serve_create(self, request: kmock.Request) -> kmock.Payload:
        resource = self._resource_of(request)
        obj = self._store.create(
            resource, request.namespace, _object_body(request), dry_run=_dry_run(request)
        )
        return Response(status=201, payload=obj)

    async def _serve_binding(self, request: kmock.Request) -> kmock.Payload:
        """POST `pods/<name>/binding`: the scheduler's way to set a pod's node (a `Success` Status, 201)."""
        node = (_object_body(request).get("target") or {}).get("name")
        if not node or request.name is None:
            raise errors.invalid("", "bindings", request.name, "target.name: Required value")
        self._store.bind(request.namespace, request.name, str(node))
        success = {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success", "code": 201}
        return Response(status=201, payload=success)

    async def _serve_update(self, request: kmock.Request) -> kmock.Payload:
        """PATCH of an object, its `/status` or its `/scale`, in any of the patch formats."""
        resource, name = self._object_of(request)
        content_type = patches.content_type_of(request.headers)
        try:
            patch = patches.parse_body(content_type, request.body)
        except patches.UnsupportedPatchType as exc:
            raise errors.unsupported_media_type(content_type) from exc
        except patches.PatchError as exc:
            raise errors.bad_request(str(exc)) from exc

        store, sub = self._store, request.subresource
        if content_type == patches.APPLY_PATCH and sub is None:
            namespace = store.scope(resource, request.namespace)
            if store.find(resource, namespace, name) is None:  # server-side apply creates what is missing
                body = dict(patch) if isinstance(patch, Mapping) else patch
                if isinstance(body, dict):
                    body["metadata"] = {**(body.get("metadata") or {}), "name": name}
                created = store.create(resource, request.namespace, body, dry_run=_dry_run(request))
                return Response(status=201, payload=created)

        def change(old: dict[str, Any]) -> dict[str, Any]:
            try:
                if sub == "scale":
                    paths = store.scale_paths(resource)
                    return _apply_scale(
                        old, paths, patches.apply_patch(to_scale(old, paths), content_type, patch)
                    )
                return patches.apply_patch(old, content_type, patch)
            except patches.PatchError as exc:
                raise errors.invalid(resource.group, resource.plural, name, str(exc)) from exc

        obj = store.update(
            resource, request.namespace, name, change, subresource=sub, dry_run=_dry_run(request)
        )
        # Always an explicit status: a kmock reaction keeps the last status it answered with.
        payload = to_scale(obj, store.scale_paths(resource)) if sub == "scale" else obj
        return Response(status=200, payload=payload)

    async def _serve_replace(self, request: kmock.Request) -> kmock.Payload:
        """PUT: replace an object (or its `/status`, or its `/scale`), conditional on a resourceVersion."""
        resource, name = self._object_of(request)
        body = _object_body(request)
        body_name = (body.get("metadata") or {}).get("name")
        if body_name and body_name != name:
            raise errors.bad_request(
                f"the name of the object ({body_name}) does not match the name on the URL ({name})"
            )

        store, sub = self._store, request.subresource
        paths = store.scale_paths(resource)

        def change(old: dict[str, Any]) -> dict[str, Any]:
            return _apply_scale(old, paths, body) if sub == "scale" else copy.deepcopy(body)

        obj = store.update(
            resource, request.namespace, name, change, subresource=sub, dry_run=_dry_run(request)
        )
        return to_scale(obj, paths) if sub == "scale" else obj

    async def _serve_delete(self, request: kmock.Request) -> kmock.Payload:
        resource, name = self._object_of(request)
        if request.subresource is not None:
            raise errors.method_not_allowed(
                f"DELETE is not supported on {resource.plural}/{request.subresource}"
            )
        options = _delete_options(request)
        return self._store.delete(resource, request.namespace, name, options, dry_run=_dry_run(request))

    async def _serve_delete_collection(self, request: kmock.Request) -> kmock.Payload:
        """`deletecollection`: delete every object the selectors match; answer with their list."""
        resource = self._resource_of(request)
        where = self._filter_of(request)
        options = _delete_options(request)
        deleted = []
        for obj in self._store.select(resource, where):
            metadata = obj.get("metadata") or {}
            namespace, name = metadata.get("namespace"), metadata["name"]
            deleted.append(self._store.delete(resource, namespace, name, options, dry_run=_dry_run(request)))
        api_version, kind = self._store.type_meta(resource)
        metadata_out = {"resourceVersion": str(self._store.resource_version)}
        return {"apiVersion": api_version, "kind": f"{kind}List", "metadata": metadata_out, "items": deleted}

    # -- request helpers ---------------------------------------------------------------------------------

    @staticmethod
    def _is_collection_request(request: kmock.Request) -> bool:
        resource = request.resource
        return resource is not None and resource.plural is not None and request.name is None

    def _resource_of(self, request: kmock.Request) -> kmock.resource:
        if request.resource is None:
            raise errors.not_found(None, request.url.path, None)
        self._store.info(request.resource)
        return request.resource

    def _object_of(self, request: kmock.Request) -> tuple[kmock.resource, str]:
        resource = self._resource_of(request)
        if request.name is None:
            raise errors.method_not_allowed(f"{request.method.value} needs an object name in the URL")
        return resource, request.name

    def _filter_of(self, request: kmock.Request) -> ObjectFilter:
        resource = self._resource_of(request)
        namespace = request.namespace if self._store.info(resource).namespaced else None
        try:
            return ObjectFilter.from_query(namespace, request.name, request.params)
        except SelectorError as exc:
            raise errors.bad_request(str(exc)) from exc


def _apply_scale(old: dict[str, Any], paths: ScalePaths, scale: Any) -> dict[str, Any]:
    """Write the replicas of a `Scale` document into the object, carrying its resourceVersion precondition."""
    replicas = replicas_of(scale) if isinstance(scale, Mapping) else None
    if replicas is None:
        raise errors.invalid(
            "autoscaling", "scales", None, "spec.replicas: Invalid value: must be a non-negative integer"
        )
    new = set_path(old, paths.spec_replicas, replicas)
    expected = (scale.get("metadata") or {}).get("resourceVersion")
    new["metadata"] = {**new.get("metadata", {}), "resourceVersion": expected}
    return new


def _object_body(request: kmock.Request) -> dict[str, Any]:
    """The object sent with POST or PUT: JSON (as every client here sends) or YAML; protobuf is refused."""
    content_type = patches.content_type_of(request.headers)
    if content_type in ("application/yaml", "application/x-yaml"):
        try:
            body = yaml.safe_load(request.body)
        except yaml.YAMLError as exc:
            raise errors.bad_request(f"the body is not valid YAML: {exc}") from exc
    elif "protobuf" in content_type:
        # kubectl's typed generators (`kubectl create namespace/configmap`) send protobuf; manifests do not.
        raise errors.api_error(
            415,
            "UnsupportedMediaType",
            "the emulator reads JSON and YAML bodies, not protobuf: use a manifest (`kubectl create -f`)",
        )
    else:
        body = request.data
    if not isinstance(body, dict):
        raise errors.bad_request("the body of the request must be a JSON object")
    return body


def _dry_run(request: kmock.Request) -> bool:
    """`?dryRun=All`: validate and answer, store nothing (kubectl diff, --dry-run=server)."""
    return bool(request.params.get("dryRun"))


def _delete_options(request: kmock.Request) -> dict[str, Any]:
    """DeleteOptions from the body, with the query-parameter forms (`?propagationPolicy=...`) as fallback."""
    options: dict[str, Any] = dict(request.data) if isinstance(request.data, dict) else {}
    if "propagationPolicy" in request.params:
        options.setdefault("propagationPolicy", request.params["propagationPolicy"])
    return options


def _int_param(params: Mapping[str, str], name: str) -> int | None:
    try:
        return int(params[name]) if params.get(name) else None
    except ValueError as exc:
        raise errors.bad_request(f"invalid {name}: {params[name]!r}") from exc


def _list_key(obj: Mapping[str, Any]) -> tuple[str, str]:
    metadata = obj.get("metadata") or {}
    return str(metadata.get("namespace") or ""), str(metadata.get("name") or "")


def _encode_continue(key: tuple[str, str]) -> str:
    return base64.urlsafe_b64encode(json.dumps(list(key)).encode()).decode()


def _decode_continue(token: str) -> tuple[str, str]:
    try:
        namespace, name = json.loads(base64.urlsafe_b64decode(token.encode()))
    except (ValueError, TypeError, binascii.Error) as exc:
        raise errors.bad_request(f"invalid continue token: {token!r}") from exc
    return str(namespace), str(name)
