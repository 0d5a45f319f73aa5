package io.smoothscale.sample;

import java.util.Locale;
import java.util.Map;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.function.LongConsumer;
import org.apache.kafka.streams.errors.StreamsUncaughtExceptionHandler.StreamThreadExceptionResponse;

/**
 * Opt-in misbehaviour, so that tests can make real Kafka Streams instances write the logs of the incidents
 * production apps have (the fixtures of smoothscale's log analysis). Unset, the app behaves normally.
 *
 * <ul>
 *   <li>{@code ORDERS_SLOW_KEY} with {@code ORDERS_SLOW_MS}: the first order with that key this process
 *       processes takes that many milliseconds (a processor slower than {@code max.poll.interval.ms}: the
 *       consumer's poll timeout expires, it leaves the group and rejoins when the record is done);</li>
 *   <li>{@code ORDERS_FAIL_KEY}: the first order with that key this process processes throws (an uncaught
 *       exception in a stream thread);</li>
 *   <li>{@code ORDERS_EXCEPTION_RESPONSE}: what the uncaught exception handler answers,
 *       {@code SHUTDOWN_CLIENT} (the default), {@code REPLACE_THREAD} or {@code SHUTDOWN_APPLICATION}.</li>
 * </ul>
 *
 * <p>Each fault fires once per process: the record is processed again after the rebalance or the thread's
 * replacement, and must then go through, or the incident would repeat forever.
 */
final class Faults {
    static final Faults NONE = new Faults(null, 0, null, Faults::sleep);

    private final String slowKey;
    private final long slowMs;
    private final String failKey;
    private final LongConsumer sleeper;
    private final AtomicBoolean slowed = new AtomicBoolean();
    private final AtomicBoolean failed = new AtomicBoolean();

    Faults(String slowKey, long slowMs, String failKey, LongConsumer sleeper) {
        this.slowKey = slowKey;
        this.slowMs = slowMs;
        this.failKey = failKey;
        this.sleeper = sleeper;
    }

    static Faults fromEnvironment(Map<String, String> env) {
        String slowKey = blankToNull(env.get("ORDERS_SLOW_KEY"));
        String slowMs = blankToNull(env.get("ORDERS_SLOW_MS"));
        if ((slowKey == null) != (slowMs == null)) {
            throw new IllegalArgumentException("ORDERS_SLOW_KEY and ORDERS_SLOW_MS must be set together");
        }
        long millis = 0;
        if (slowMs != null) {
            try {
                millis = Long.parseLong(slowMs);
            } catch (NumberFormatException error) {
                millis = -1;
            }
            if (millis <= 0) {
                throw new IllegalArgumentException("ORDERS_SLOW_MS must be a positive number of milliseconds, not '" + slowMs + "'");
            }
        }
        return new Faults(slowKey, millis, blankToNull(env.get("ORDERS_FAIL_KEY")), Faults::sleep);
    }

    /** The uncaught exception handler's response named by {@code ORDERS_EXCEPTION_RESPONSE}. */
    static StreamThreadExceptionResponse exceptionResponse(Map<String, String> env) {
        String name = blankToNull(env.get("ORDERS_EXCEPTION_RESPONSE"));
        if (name == null) {
            return StreamThreadExceptionResponse.SHUTDOWN_CLIENT;
        }
        try {
            return StreamThreadExceptionResponse.valueOf(name.toUpperCase(Locale.ROOT));
        } catch (IllegalArgumentException error) {
            throw new IllegalArgumentException("ORDERS_EXCEPTION_RESPONSE must be REPLACE_THREAD, SHUTDOWN_CLIENT"
                + " or SHUTDOWN_APPLICATION, not '" + name + "'", error);
        }
    }

    /** Called before an order is processed: sleeps or throws if it is the first with a fault's key. */
    void beforeProcessing(String key) {
        if (key == null) {
            return;
        }
        if (key.equals(slowKey) && slowed.compareAndSet(false, true)) {
            sleeper.accept(slowMs);
        }
        if (key.equals(failKey) && failed.compareAndSet(false, true)) {
            throw new IllegalStateException("fault injected by ORDERS_FAIL_KEY: order " + key);
        }
    }

    private static String blankToNull(String value) {
        return value == null || value.isBlank() ? null : value;
    }

    private static void sleep(long millis) {
        try {
            Thread.sleep(millis);
        } catch (InterruptedException error) {
            Thread.currentThread().interrupt();
        }
    }
}
