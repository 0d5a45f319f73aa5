"""Per app: read Kafka in the background, keep the last good facts, and say whether Kafka is unavailable.

The reconcile loop never waits for Kafka. Each round calls `poll`, which collects a read that has finished
and starts the next one once `spec.kafka.refreshInterval` has passed; the read itself (Secret, then the
AdminClient calls in a worker thread, each bounded by `spec.kafka.timeout`) runs as a task of its own.
When a read fails, the facts of the last good read stay in use (racks and changelog sizes change rarely),
`problem` names what failed, and `poll` returns a Warning Event when the failure starts or changes and a
Normal one when Kafka answers again.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta

from smoothscale.contract.publication import Publication
from smoothscale.control.events import AppEvent, EventType
from smoothscale.control.observed import LearnedSubtopology
from smoothscale.resource import GroupProtocol, KafkaSpec, StreamsAppSpec
from smoothscale.resource.durations import parse_duration

from ..appref import AppRef
from ..kube import KubeClient
from . import plans
from .reader import KafkaReadError, read_cluster
from .secret import read_secret
from .settings import KafkaSettingsError, client_config
from .view import KafkaFacts, expected_changelogs, facts

log = logging.getLogger(__name__)

_CALLS_PER_READ = 7
"""AdminClient requests in one read, one after another: the bound of a whole read is this many timeouts."""


@dataclass(frozen=True)
class _Request:
    kafka: KafkaSpec
    spec: StreamsAppSpec
    started: datetime
    published: Publication | None
    learned: Sequence[LearnedSubtopology] | None


class KafkaObserver:
    def __init__(self, app: AppRef, api: KubeClient, clock: Callable[[], datetime]) -> None:
        self.app = app
        self._api = api
        self._clock = clock
        self.facts = KafkaFacts()
        """From the last good read (empty before the first)."""
        self.problem: KafkaReadError | None = None
        """Why the last read failed; None once a read succeeds."""
        self.read_once = False
        """A read has finished (well or not) since `spec.kafka` was set."""
        self._task: asyncio.Task[KafkaFacts] | None = None
        self._next_read: datetime | None = None
        self._kafka: KafkaSpec | None = None

    @property
    def first_read_pending(self) -> bool:
        """`spec.kafka` is set and no read has finished yet: the first plan waits for it."""
        return self._kafka is not None and not self.read_once

    def poll(
        self,
        spec: StreamsAppSpec | None,
        published: Publication | None = None,
        learned: Sequence[LearnedSubtopology] | None = None,
    ) -> list[AppEvent]:
        """Collect a finished read, start the next one when due; returns the Events to post. Never waits.
        `published`: the plan in force (an app on the streams protocol: the read checks the group's target
        assignment against it); `learned`: the topology the app reports, whose changelog topics are read
        whatever their names."""
        events = self._collect()
        kafka = spec.kafka if spec is not None else None
        if kafka != self._kafka:
            self.close()  # a new cluster or new credentials: read again now, from scratch
            self._kafka = kafka
            self.facts, self.read_once = KafkaFacts(), False
            if kafka is None and self.problem is not None:
                self.problem = None
        if spec is None or kafka is None or self._task is not None:
            return events
        now = self._clock()
        if self._next_read is None or now >= self._next_read:
            self._next_read = now + timedelta(seconds=parse_duration(kafka.refresh_interval))
            self._task = asyncio.create_task(self._read(_Request(kafka, spec, now, published, learned)))
        return events

    def close(self) -> None:
        """Cancel a read in flight (the app is gone, or its Kafka settings changed)."""
        if self._task is not None:
            self._task.cancel()
        self._task, self._next_read = None, None

    def _collect(self) -> list[AppEvent]:
        task = self._task
        if task is None or not task.done():
            return []
        self._task = None
        if task.cancelled():
            return []
        before = self.problem
        self.read_once = True
        error = task.exception()
        events: list[AppEvent] = []
        if error is None:
            read = task.result()
            before_read = self.facts.unreadable_changelogs
            events = changelog_events(self.app.name, before_read, read.unreadable_changelogs)
            self.facts, self.problem = read, None
        elif isinstance(error, KafkaReadError):
            self.problem = error
        else:
            self.problem = KafkaReadError("KafkaReadFailed", f"reading Kafka failed: {error!r}")
        return [*events, *availability_events(before, self.problem, self._kafka)]

    async def _client_config(self, kafka: KafkaSpec) -> dict[str, str]:
        try:
            secret = (
                await read_secret(self._api, self.app, kafka.secret_ref.name) if kafka.secret_ref else None
            )
            return client_config(kafka, secret)
        except KafkaSettingsError as error:
            raise KafkaReadError("KafkaCredentialsInvalid", str(error)) from error

    async def hand_over(self, kafka: KafkaSpec, plan: Publication) -> None:
        """For an app on the streams protocol: hand `plan` to the brokers' plugin (`plans.hand_over`)."""
        config = await self._client_config(kafka)
        timeout = parse_duration(kafka.timeout)
        await asyncio.to_thread(
            plans.hand_over, config, kafka.application_id or self.app.name, plan, timeout=timeout
        )

    async def _read(self, request: _Request) -> KafkaFacts:
        kafka = request.kafka
        config = await self._client_config(kafka)
        application_id = kafka.application_id or self.app.name
        inputs = [topic for sub in request.spec.topology.subtopologies for topic in sub.input_topics]
        timeout = parse_duration(kafka.timeout)
        expected = expected_changelogs(request.spec, application_id, request.learned)
        read = asyncio.to_thread(
            read_cluster,
            config,
            application_id=application_id,
            input_topics=inputs,
            timeout=timeout,
            now=request.started,
            streams_protocol=kafka.group_protocol is GroupProtocol.STREAMS,
            published=request.published,
            changelogs=expected,
        )
        try:
            view = await asyncio.wait_for(read, timeout * _CALLS_PER_READ + 5)
        except TimeoutError as error:
            message = (
                f"no complete answer from Kafka at {kafka.bootstrap_servers} within {kafka.timeout} per call"
            )
            raise KafkaReadError("KafkaUnreachable", message) from error
        return facts(request.spec, application_id, view, expected)


def availability_events(
    before: KafkaReadError | None, after: KafkaReadError | None, kafka: KafkaSpec | None
) -> list[AppEvent]:
    """A Warning when reading Kafka starts failing or fails for another reason (its message names what
    failed), a Normal Event when it recovers."""
    if after is not None:
        if before is not None and before.reason == after.reason:
            return []  # still failing the same way (messages carry timings that differ on every try)
        return [AppEvent(EventType.WARNING, "KafkaUnavailable", after.message)]
    if before is not None and kafka is not None:
        return [
            AppEvent(EventType.NORMAL, "KafkaAvailable", f"Kafka at {kafka.bootstrap_servers} answers again")
        ]
    return []


def changelog_events(app: str, before: Mapping[str, str], after: Mapping[str, str]) -> list[AppEvent]:
    """A Warning (and a WARNING line in the log) naming each changelog topic that can no longer be read, why
    and what to do; a Normal Event when every one can be read again. Once per change, not per read."""
    if set(after) == set(before):
        return []
    if not after:
        return [AppEvent(EventType.NORMAL, "ChangelogsReadable", "every changelog topic can be read again")]
    message = "; ".join(after[topic] for topic in sorted(after))
    log.warning("app %s: %s", app, message)
    return [AppEvent(EventType.WARNING, "ChangelogUnreadable", message)]
