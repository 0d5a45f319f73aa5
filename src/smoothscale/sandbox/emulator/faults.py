"""Fault injection: make the next N matching requests fail with a status code, or hang for a while.

Chaos tests need an API server that misbehaves on cue: a 409 on the next status patch, a 500 on the next
ConfigMap write, a watch that takes 10 s to answer. A fault is checked before the request touches any state,
so a failed write changes nothing, exactly like a real server that rejected it.

A fault may be armed from another thread (a synchronous test driving a threaded emulator): hence the lock.
"""

from __future__ import annotations

import asyncio
import fnmatch
import re
import threading
from collections.abc import Callable
from dataclasses import dataclass

import kmock

from . import errors

RequestPredicate = Callable[[kmock.Request], bool]

_REASONS = {
    400: "BadRequest",
    401: "Unauthorized",
    403: "Forbidden",
    404: "NotFound",
    409: "Conflict",
    410: "Gone",
    422: "Invalid",
    429: "TooManyRequests",
    500: "InternalError",
    503: "ServiceUnavailable",
    504: "Timeout",
}


@dataclass
class Fault:
    """One armed fault. `times=None` keeps it armed until `clear()`; `hits` counts the requests it took."""

    status: int | None
    delay: float
    times: int | None
    method: str | None = None
    path: str | re.Pattern[str] | None = None
    when: RequestPredicate | None = None
    message: str | None = None
    hits: int = 0

    @property
    def exhausted(self) -> bool:
        return self.times is not None and self.hits >= self.times

    def matches(self, request: kmock.Request) -> bool:
        """Method (case-insensitive), path (glob string or regex searched in the path), then the predicate."""
        if self.method is not None and str(request.method.value).upper() != self.method.upper():
            return False
        path = request.url.path
        if isinstance(self.path, re.Pattern) and not self.path.search(path):
            return False
        if isinstance(self.path, str) and not fnmatch.fnmatchcase(path, self.path):
            return False
        return self.when is None or bool(self.when(request))


class FaultInjector:
    """The faults armed on one emulator; the first armed fault that matches a request takes it."""

    def __init__(self) -> None:
        self._faults: list[Fault] = []
        self._lock = threading.Lock()

    @property
    def armed(self) -> list[Fault]:
        with self._lock:
            return [fault for fault in self._faults if not fault.exhausted]

    def fail(
        self,
        status: int = 500,
        *,
        times: int | None = 1,
        method: str | None = None,
        path: str | re.Pattern[str] | None = None,
        when: RequestPredicate | None = None,
        message: str | None = None,
        delay: float = 0.0,
    ) -> Fault:
        """Answer the next `times` matching requests with `status` (after `delay` seconds, if given)."""
        return self._arm(Fault(status, delay, times, method, path, when, message))

    def conflict(
        self,
        *,
        times: int | None = 1,
        method: str | None = None,
        path: str | re.Pattern[str] | None = None,
        when: RequestPredicate | None = None,
    ) -> Fault:
        """409 Conflict, as when another writer got there first: `conflict(times=2, method='PATCH')`."""
        return self.fail(409, times=times, method=method, path=path, when=when)

    def error(
        self,
        *,
        times: int | None = 1,
        method: str | None = None,
        path: str | re.Pattern[str] | None = None,
        when: RequestPredicate | None = None,
    ) -> Fault:
        """500 InternalError, as when etcd or an admission webhook fails."""
        return self.fail(500, times=times, method=method, path=path, when=when)

    def hang(
        self,
        seconds: float,
        *,
        times: int | None = 1,
        method: str | None = None,
        path: str | re.Pattern[str] | None = None,
        when: RequestPredicate | None = None,
    ) -> Fault:
        """Hold the next `times` matching requests for `seconds`, then serve them normally."""
        return self._arm(Fault(None, seconds, times, method, path, when))

    def clear(self) -> None:
        with self._lock:
            self._faults.clear()

    def remove(self, fault: Fault) -> None:
        """Disarm one fault (armed with `times=None`, say), leaving the others."""
        with self._lock:
            self._faults = [armed for armed in self._faults if armed is not fault]

    async def intercept(self, request: kmock.Request) -> None:
        """Apply the first matching fault to the request: sleep, then raise its failure (if any)."""
        fault = self._take(request)
        if fault is None:
            return
        if fault.delay > 0:
            await asyncio.sleep(fault.delay)
        if fault.status is not None:
            reason = _REASONS.get(fault.status, "Failure")
            message = (
                fault.message
                or f"injected fault: {fault.status} {reason} for {request.method.value} {request.url.path}"
            )
            raise errors.api_error(fault.status, reason, message)

    def _arm(self, fault: Fault) -> Fault:
        with self._lock:
            self._faults.append(fault)
        return fault

    def _take(self, request: kmock.Request) -> Fault | None:
        with self._lock:
            for fault in self._faults:
                if not fault.exhausted and fault.matches(request):
                    fault.hits += 1
                    if fault.exhausted:
                        self._faults.remove(fault)
                    return fault
        return None
