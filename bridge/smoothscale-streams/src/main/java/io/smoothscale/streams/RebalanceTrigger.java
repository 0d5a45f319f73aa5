package io.smoothscale.streams;

import java.util.concurrent.atomic.AtomicReference;

/**
 * A rebalance this instance wants, handed from the thread that decides (the publication follower) to the
 * first stream thread that polls next. {@code KafkaConsumer} is not thread-safe: only its own polling thread
 * may call {@code enforceRebalance}, so the request waits here until {@link RebalancingConsumer#poll} takes it.
 */
public final class RebalanceTrigger {
    private final AtomicReference<String> pending = new AtomicReference<>();

    /** Ask for a rebalance; {@code reason} reaches the broker's and the app's logs. */
    public void request(String reason) {
        pending.set(reason);
    }

    /** The pending request's reason, at most once per request (null when none is pending). */
    String take() {
        return pending.getAndSet(null);
    }

    public boolean isPending() {
        return pending.get() != null;
    }
}
