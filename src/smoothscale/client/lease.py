"""A pod's lease: a `coordination.k8s.io/v1` Lease it renews, so that it processes its actives only while
the operator cannot have failed them over (docs/failover.md).

The operator fails a pod's actives over once it has seen no renewal of the pod's Lease for a whole lease,
timed by its own clock from the moment it saw the last one. The pod times its lease from the moment it
*sent* the renewal that succeeded, which is before the operator can have seen it: so the pod's lease always
ends first, and the pod stops processing a margin before that (`fence`). Clocks are never compared, only
durations measured on each side (the monotonic clock, which also counts a pause: a process stopped and
continued finds its lease gone, not extended).

Renewals are writes conditional on the Lease's resourceVersion, and so is the operator's take of an expired
Lease (it empties the holder and writes down the generation in force): the API server orders the two. A
renewal that comes too late conflicts; the pod then reads the Lease, sees it taken, and takes it back, but
resumes its actives only from a generation published after the take (`TAKEN_AT_GENERATION_ANNOTATION`):
the one that failed them over, or any after it. A renewal that conflicts with nothing means the operator
took nothing, so nothing was failed over: the pod resumes from the newest generation it has.
"""

from __future__ import annotations

import json
import logging
import math
import threading
import time
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any, cast

import kubernetes

from smoothscale.contract import shared_names as contract

from .follow import short_error

log = logging.getLogger(__name__)

FENCE_MARGIN = 1 / 6
"""The share of the lease before its end at which a pod that could not renew stops processing: the time
its revocations take, and the difference between the two sides' clock rates, must fit in it."""
RENEWALS_PER_LEASE = 3
"""A pod renews every third of its lease, as Kubernetes' node heartbeats do (a Lease of 40 s every 10 s is
a fourth): two renewals may fail before the pod stops."""

Body = dict[str, Any]


class LeaseKeeper:
    """Renews one pod's Lease from a daemon thread, and fences the pod when it could not in time.

    `on_lost()` is called (from the watchdog thread) when the lease is about to run out unrenewed: the pod
    must stop its actives before it returns. `on_held(from_generation)` is called after a renewal that ended
    a fence: the pod may resume its actives from the newest generation it has (None) or, when the operator
    had taken the Lease, from `from_generation` on. Before the first renewal the pod holds no lease.
    """

    def __init__(
        self,
        api: kubernetes.client.ApiClient,
        *,
        namespace: str,
        pod: str,
        app: str,
        seconds: float,
        on_lost: Callable[[], None],
        on_held: Callable[[int | None], object],
        applied: Callable[[], int],
        stop: threading.Event,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._leases = kubernetes.client.CoordinationV1Api(api)
        self._namespace = namespace
        self._pod = pod
        self._app = app
        self._name = contract.pod_lease(pod)
        self._seconds = seconds
        self._on_lost = on_lost
        self._on_held = on_held
        self._applied = applied
        self._stop = stop
        self._clock = clock
        self._until = -math.inf
        """When the lease the pod holds ends (monotonic clock): the send time of the last renewal + lease."""
        self._fenced = True
        self._taken_at: int | None = None
        """The generation in force when the operator took the Lease, until the pod holds it again."""
        self._waiting_for: int | None = None
        """The generation the pod waits for since it took its Lease back, until it has applied it."""
        self._lease: Body | None = None
        self._owner: Body | None = None
        self._changed = threading.Condition()

    @property
    def seconds(self) -> float:
        return self._seconds

    def holds(self) -> bool:
        """The pod holds its lease now, short of the margin: it may process its actives."""
        return not self._fenced and self._clock() < self._fence_at()

    def owned_by(self, pod_uid: str) -> None:
        """The pod's uid, once its own object is read: the Lease is owned by the pod from the next renewal
        on, so that Kubernetes' garbage collector deletes it with the pod (a pod removed on a scale-in
        leaves no Lease behind)."""
        self._owner = {"apiVersion": "v1", "kind": "Pod", "name": self._pod, "uid": pod_uid}

    def start(self) -> None:
        threading.Thread(target=self._renew_loop, name="lease-renew", daemon=True).start()
        threading.Thread(target=self._watchdog, name="lease-watchdog", daemon=True).start()

    def close(self) -> None:
        with self._changed:
            self._changed.notify_all()

    def _fence_at(self) -> float:
        return self._until - self._seconds * FENCE_MARGIN

    # -- renewing --------------------------------------------------------------------------------------------

    def _renew_loop(self) -> None:
        interval = self._seconds / RENEWALS_PER_LEASE
        while not self._stop.is_set():
            sent = self._clock()
            try:
                renewed = self._renew()
            except Exception as error:  # the API server unreachable, slow or refusing: try again soon
                log.warning(
                    "pod %s could not renew its lease %s: %s", self._pod, self._name, short_error(error)
                )
                self._lease = None  # read it again: a write that timed out may have landed
                self._stop.wait(min(interval, 1.0))
                continue
            if not renewed:
                continue  # a conflict: the Lease was read again; renew at once
            self._held(sent)
            self._stop.wait(max(0.0, sent + interval - self._clock()))

    def _renew(self) -> bool:
        """One renewal (or acquisition) of the Lease; False when it conflicted (the Lease has been read again,
        so the next attempt goes from what is there now)."""
        timeout = self._seconds / RENEWALS_PER_LEASE
        lease = self._lease if self._lease is not None else self._read(timeout)
        if lease is None:
            return self._write(self._leases.create_namespaced_lease, self._new_lease(), timeout)
        spec = lease.get("spec") or {}
        if spec.get("holderIdentity") != self._pod:
            self._taken_at = _taken_at(lease)
            log.warning(
                "pod %s lost its lease %s (taken in generation %s): takes it back, resumes its actives only "
                "from a later generation",
                self._pod,
                self._name,
                self._taken_at,
            )
        return self._write(self._replace, self._held_lease(lease), timeout)

    def _replace(self, namespace: str, body: Body, **options: Any) -> Any:
        # a plain dict goes to the API as it is (the client's models would drop fields it does not know)
        return self._leases.replace_namespaced_lease(self._name, namespace, cast(Any, body), **options)

    def _read(self, timeout: float) -> Body | None:
        try:
            response: Any = self._leases.read_namespaced_lease(
                self._name, self._namespace, _preload_content=False, _request_timeout=timeout
            )
        except kubernetes.client.ApiException as error:
            if error.status == 404:
                return None
            raise
        lease: Body = json.loads(response.data)
        return lease

    def _write(self, call: Callable[..., Any], body: Body, timeout: float) -> bool:
        try:
            response = call(self._namespace, body, _preload_content=False, _request_timeout=timeout)
        except kubernetes.client.ApiException as error:
            if error.status == 409:  # renewed or taken by another party, or created meanwhile
                self._lease = self._read(timeout)
                return False
            if error.status == 404:  # deleted: create it again
                self._lease = None
                return False
            raise
        self._lease = json.loads(response.data)
        return True

    def _new_lease(self) -> Body:
        now = _micro_time()
        return {
            "apiVersion": "coordination.k8s.io/v1",
            "kind": "Lease",
            "metadata": {
                "name": self._name,
                "namespace": self._namespace,
                "labels": {contract.LEASE_LABEL: self._app},
                **self._owner_references(),
            },
            "spec": {
                "holderIdentity": self._pod,
                "leaseDurationSeconds": math.ceil(self._seconds),
                "acquireTime": now,
                "renewTime": now,
                "leaseTransitions": 0,
            },
        }

    def _held_lease(self, lease: Body) -> Body:
        """`lease` renewed by this pod (taken back when another holder, or none, is in it), conditional on
        the resourceVersion read."""
        now = _micro_time()
        metadata = dict(lease.get("metadata") or {})
        annotations = dict(metadata.get("annotations") or {})
        annotations.pop(contract.TAKEN_AT_GENERATION_ANNOTATION, None)
        metadata["annotations"] = annotations
        metadata["labels"] = {**(metadata.get("labels") or {}), contract.LEASE_LABEL: self._app}
        metadata.update(self._owner_references())
        spec = dict(lease.get("spec") or {})
        if spec.get("holderIdentity") != self._pod:
            spec["acquireTime"] = now
            spec["leaseTransitions"] = int(spec.get("leaseTransitions") or 0) + 1
        spec.update(holderIdentity=self._pod, leaseDurationSeconds=math.ceil(self._seconds), renewTime=now)
        waiting = self._taken_at + 1 if self._taken_at is not None else self._waiting_for
        if waiting is not None and waiting > self._applied():
            # the operator publishes it if it would not otherwise (the take's generation never came)
            annotations[contract.WAITING_FOR_GENERATION_ANNOTATION] = str(waiting)
        else:
            annotations.pop(contract.WAITING_FOR_GENERATION_ANNOTATION, None)
            waiting = None
        self._waiting_for = waiting
        return {"apiVersion": "coordination.k8s.io/v1", "kind": "Lease", "metadata": metadata, "spec": spec}

    def _owner_references(self) -> Body:
        return {"ownerReferences": [self._owner]} if self._owner is not None else {}

    def _held(self, sent: float) -> None:
        """A renewal sent at `sent` succeeded: the lease runs to `sent` + its length; a fence ends, unless
        the answer came so late that the lease it gives is already within its margin."""
        if self._clock() >= sent + self._seconds * (1 - FENCE_MARGIN):
            log.warning("pod %s: its lease renewal took too long to count; renews again", self._pod)
            return
        with self._changed:
            self._until = sent + self._seconds
            fenced, self._fenced = self._fenced, False
            taken_at, self._taken_at = self._taken_at, None
            self._changed.notify_all()
        if fenced:
            self._on_held(None if taken_at is None else taken_at + 1)

    # -- fencing ---------------------------------------------------------------------------------------------

    def _watchdog(self) -> None:
        """Fence the pod at the margin before its lease ends, unless a renewal moved the end meanwhile."""
        while not self._stop.is_set():
            with self._changed:
                wait = self._fence_at() - self._clock()
                if self._fenced or wait > 0:
                    self._changed.wait(timeout=None if self._fenced else wait)
                    continue
                self._fenced = True
            log.warning(
                "pod %s: no lease renewal for %.1f s: stops its actives until it holds its lease again",
                self._pod,
                self._seconds * (1 - FENCE_MARGIN),
            )
            self._on_lost()


def _taken_at(lease: Body) -> int | None:
    """The generation the operator wrote down when it took the Lease (None: taken without one)."""
    annotations = (lease.get("metadata") or {}).get("annotations") or {}
    value = annotations.get(contract.TAKEN_AT_GENERATION_ANNOTATION)
    try:
        return int(value) if value is not None else None
    except ValueError:
        return None


def _micro_time() -> str:
    """Now, as a Kubernetes MicroTime."""
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
