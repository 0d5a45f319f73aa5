package io.smoothscale.streams;

import java.util.concurrent.atomic.AtomicReference;
import java.util.function.Consumer;

/**
 * A rebalance this instance wants, handed from the thread that decides (the publication follower) to the
 * stream threads. {@code KafkaConsumer} is not thread-safe: only its own polling thread may call
 * {@code enforceRebalance}. With the code API the request waits here until {@link RebalancingConsumer#poll}
 * takes it; with configuration alone ({@link SmoothscaleMetricsReporter}) a listener brings the stream
 * threads' scheduled follow-up rebalance forward, which each thread starts from its own loop.
 */
public final class RebalanceTrigger {
    private final AtomicReference<String> pending = new AtomicReference<>();
    private final AtomicReference<Consumer<String>> listener = new AtomicReference<>(reason -> { });

    /** Ask for a rebalance; {@code reason} reaches the broker's and the app's logs. */
    public void request(String reason) {
        pending.set(reason);
        listener.get().accept(reason);
    }

    /** Also hand every request to {@code onRequest} (the configuration-only path). */
    void onRequest(Consumer<String> onRequest) {
        listener.set(onRequest);
    }

    /** The pending request's reason, at most once per request (null when none is pending). */
    String take() {
        return pending.getAndSet(null);
    }

    public boolean isPending() {
        return pending.get() != null;
    }
}
