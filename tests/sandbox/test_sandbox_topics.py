"""Creating a sandbox's topics on a cluster that has just started: another attempt after the errors such a
cluster gives (librdkafka dropping its bootstrap connection with the request on it, `_DESTROY_BROKER`, as a
demo's first topic failed in CI), and a topic an earlier attempt created counts as created. Against a
stand-in admin client: the error cannot be brought about on demand on a real broker."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from concurrent.futures import Future

import pytest
from confluent_kafka import KafkaError, KafkaException
from confluent_kafka.admin import NewTopic  # type: ignore[attr-defined]

from smoothscale.sandbox.kafka import topics


class Answers:
    """Each attempt's answer per topic (None: created), in order; the topics each attempt asked for."""

    def __init__(self, *attempts: dict[str, int | None]) -> None:
        self.attempts: Iterator[dict[str, int | None]] = iter(attempts)
        self.asked: list[list[str]] = []

    def admin(self, _config: object) -> Answers:
        return self

    def create_topics(self, wanted: Sequence[NewTopic], operation_timeout: float) -> dict[str, Future[None]]:
        self.asked.append([topic.topic for topic in wanted])
        answers = next(self.attempts)
        futures = {}
        for topic in wanted:
            future: Future[None] = Future()
            code = answers[topic.topic]
            if code is None:
                future.set_result(None)
            else:
                future.set_exception(KafkaException(KafkaError(code)))
            futures[topic.topic] = future
        return futures


@pytest.fixture(autouse=True)
def no_waiting(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(topics, "RETRY_SECONDS", 0.0)


def create(answers: Answers, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(topics, "AdminClient", answers.admin)
    topics.create_topics("127.0.0.1:9092", [NewTopic("orders", 4, 1), NewTopic("totals", 4, 1)])


def test_a_dropped_bootstrap_connection_is_tried_again_and_a_topic_it_created_counts(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    answers = Answers(
        {"orders": KafkaError._DESTROY_BROKER, "totals": None},
        {"orders": KafkaError.TOPIC_ALREADY_EXISTS},  # the first attempt had created it
    )
    create(answers, monkeypatch)
    assert answers.asked == [["orders", "totals"], ["orders"]]


def test_a_topic_that_exists_before_the_first_attempt_is_an_error(monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises(KafkaException) as raised:
        create(Answers({"orders": KafkaError.TOPIC_ALREADY_EXISTS, "totals": None}), monkeypatch)
    assert raised.value.args[0].code() == KafkaError.TOPIC_ALREADY_EXISTS


def test_another_error_is_raised_at_once_and_passing_ones_only_so_often(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    answers = Answers({"orders": KafkaError.POLICY_VIOLATION, "totals": None})
    with pytest.raises(KafkaException):
        create(answers, monkeypatch)
    assert len(answers.asked) == 1
    dropped = Answers(*[{"orders": KafkaError._TRANSPORT, "totals": None}] * topics.ATTEMPTS)
    with pytest.raises(KafkaException):
        create(dropped, monkeypatch)
    assert len(dropped.asked) == topics.ATTEMPTS
