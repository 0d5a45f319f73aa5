"""The Kafka Streams chaos run's exactly-once checks (`benchmarks/streams_chaos.py`): what they must catch
even when each customer's last total looks right. (With `order_value`'s seven amounts, orders 3 and 73 share
customer and amount: the first test's pair cancels out.)"""

from __future__ import annotations

from smoothscale.sandbox.kafka_streams import totals_of, unique_order_value
from smoothscale.sandbox.streams_chaos import regressions


def test_a_lost_order_and_another_counted_twice_do_not_cancel_out() -> None:
    orders = [unique_order_value(i) for i in range(200)]
    lost_and_doubled = [*orders[:3], *orders[4:], orders[73]]  # order 3 lost, order 73 (same customer) twice
    assert totals_of(lost_and_doubled) != totals_of(orders)


def test_a_committed_total_that_repeats_or_shrinks_is_reported() -> None:
    grew = [("customer-1", "1,5"), ("customer-2", "1,3"), ("customer-1", "3,9"), ("customer-2", "2,4")]
    assert regressions(grew) == []
    counted_again = [*grew, ("customer-1", "3,9"), ("customer-2", "1,3"), ("customer-2", "2,4")]
    assert regressions(counted_again) == ["customer-1: 3 -> 3", "customer-2: 2 -> 1"]
