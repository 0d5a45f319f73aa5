package io.smoothscale.streams;

import java.util.HashMap;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentMap;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;
import java.util.function.Predicate;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.apache.kafka.common.MetricName;
import org.apache.kafka.common.metrics.KafkaMetric;

/**
 * What one Kafka Streams client of this process tells the bridge through {@link SmoothscaleMetricsReporter}
 * when the app adopts smoothscale by configuration alone: the metrics the bridge reads (client state, topology
 * description, task-level metrics, the restore consumers' per-partition lag), the stream threads' follow-up
 * rebalance schedules, and the bridge itself, which the {@link OperatorTaskAssignor} of the same client finds
 * here. Kafka Streams makes a reporter for its own registry and one for every client it creates, each from the
 * app's {@code metric.reporters}; they meet here under the Streams {@code client.id}, the pod's name.
 */
final class ReportedClient {
    /**
     * A stream thread's main consumer, {@code <client.id>-StreamThread-<n>-consumer}, or a restore consumer: the
     * stream thread's, {@code <client.id>-StreamThread-<n>-restore-consumer}, or the state updater thread's,
     * {@code <client.id>-StateUpdater-<n>-restore-consumer} (Kafka Streams 4.x).
     */
    private static final Pattern THREAD_CONSUMER = Pattern.compile(
        "^(?<client>.+)-(StreamThread-\\d+-(restore-)?consumer|StateUpdater-\\d+-restore-consumer)$");
    private static final ConcurrentMap<String, ReportedClient> BY_CLIENT_ID = new ConcurrentHashMap<>();

    private final String clientId;
    private final Map<MetricName, KafkaMetric> metrics = new ConcurrentHashMap<>();
    private final Map<String, Boolean> lastRoles = new ConcurrentHashMap<>();
    private final Set<AtomicLong> rebalanceSchedules = ConcurrentHashMap.newKeySet();
    private final AtomicReference<SmoothscaleBridge> bridge = new AtomicReference<>();

    private ReportedClient(String clientId) {
        this.clientId = clientId;
    }

    /** The Kafka Streams client {@code clientId} of this process (made on first use). */
    static ReportedClient of(String clientId) {
        return BY_CLIENT_ID.computeIfAbsent(clientId, ReportedClient::new);
    }

    /** The bridge that Kafka Streams client {@code clientId}'s reporter started, if any. */
    static Optional<SmoothscaleBridge> bridgeOf(String clientId) {
        return Optional.ofNullable(BY_CLIENT_ID.get(clientId)).map(client -> client.bridge.get());
    }

    /** The Streams {@code client.id} a stream thread's main or restore consumer belongs to. */
    static Optional<String> clientOfConsumer(String consumerClientId) {
        Matcher matcher = THREAD_CONSUMER.matcher(consumerClientId);
        return matcher.matches() ? Optional.of(matcher.group("client")) : Optional.empty();
    }

    String clientId() {
        return clientId;
    }

    /** Attach the client's bridge; refused when another Kafka Streams client of this process has the same id. */
    void attach(SmoothscaleBridge started) {
        if (!bridge.compareAndSet(null, started)) {
            throw new IllegalStateException("another Kafka Streams client of this process already runs with client.id '"
                + clientId + "' under smoothscale: each pod runs one Kafka Streams client per application");
        }
    }

    /** Forget the client (its Kafka Streams closed its metrics). */
    void detach(SmoothscaleBridge closing) {
        if (bridge.compareAndSet(closing, null)) {
            BY_CLIENT_ID.remove(clientId, this);
        }
    }

    void put(KafkaMetric metric) {
        metrics.put(metric.metricName(), metric);
        if (ReportedTasks.isMarker(metric.metricName())) {
            lastRoles.put(metric.metricName().tags().get("task-id"),
                metric.metricName().name().equals(ReportedTasks.ACTIVE_MARKER));
        }
    }

    /** Each task's role as the last marker it registered gave it (true: active); see {@link ReportedTasks#roles}. */
    Map<String, Boolean> lastRoles() {
        return Map.copyOf(lastRoles);
    }

    void remove(KafkaMetric metric) {
        metrics.remove(metric.metricName(), metric);
    }

    /** The metrics seen, by name. */
    Map<MetricName, KafkaMetric> metrics() {
        return metrics;
    }

    /** Each metric's current value, read once. */
    Map<MetricName, Object> values() {
        return values(name -> true);
    }

    /** The current value of each metric {@code which} selects (reading a rate's value computes it). */
    Map<MetricName, Object> values(Predicate<MetricName> which) {
        Map<MetricName, Object> values = new HashMap<>();
        metrics.forEach((name, metric) -> {
            if (which.test(name)) {
                values.put(name, metric.metricValue());
            }
        });
        return values;
    }

    void addRebalanceSchedule(AtomicLong schedule) {
        rebalanceSchedules.add(schedule);
    }

    void removeRebalanceSchedule(AtomicLong schedule) {
        rebalanceSchedules.remove(schedule);
    }

    /**
     * Bring every stream thread's scheduled follow-up rebalance forward to now: the thread starts it from its
     * own loop ({@code enforceRebalance}), as it starts the follow-ups a task assignor schedules. Returns
     * whether any thread was reached.
     */
    boolean rebalanceNow() {
        rebalanceSchedules.forEach(schedule -> schedule.set(0L));
        return !rebalanceSchedules.isEmpty();
    }
}
