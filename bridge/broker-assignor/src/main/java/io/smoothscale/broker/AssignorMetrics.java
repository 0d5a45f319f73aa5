package io.smoothscale.broker;

import java.util.EnumMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.atomic.AtomicLong;
import org.apache.kafka.common.MetricName;
import org.apache.kafka.common.metrics.JmxReporter;
import org.apache.kafka.common.metrics.KafkaMetricsContext;
import org.apache.kafka.common.metrics.Measurable;
import org.apache.kafka.common.metrics.MetricConfig;
import org.apache.kafka.common.metrics.Metrics;
import org.apache.kafka.common.utils.Time;

/**
 * What the assignor did, as broker metrics (Kafka's own metrics library, reported over JMX under the domain
 * {@code smoothscale}, group {@code broker-assignor}): assignments that followed a plan, the generation of
 * the last one, and fallbacks by reason. Thread-safe: counters are atomics.
 */
public final class AssignorMetrics implements AutoCloseable {
    static final String GROUP = "broker-assignor";

    private final Metrics metrics;
    private final AtomicLong followed = new AtomicLong();
    private final AtomicLong followedGeneration = new AtomicLong(-1);
    private final Map<FallbackReason, AtomicLong> fallbacks = new EnumMap<>(FallbackReason.class);

    public AssignorMetrics(boolean reportOverJmx) {
        metrics = reportOverJmx
            ? new Metrics(new MetricConfig(), List.of(new JmxReporter()), Time.SYSTEM,
                new KafkaMetricsContext("smoothscale"))
            : new Metrics();
        gauge("followed-total", "Assignments that returned the operator's plan.", Map.of(), followed);
        gauge("followed-generation", "Generation of the plan the last followed assignment returned (-1: none).",
            Map.of(), followedGeneration);
        for (FallbackReason reason : FallbackReason.values()) {
            AtomicLong count = new AtomicLong();
            fallbacks.put(reason, count);
            gauge("fallbacks-total", "Assignments that returned Kafka's sticky assignment instead, by reason.",
                Map.of("reason", reason.label()), count);
        }
    }

    private void gauge(String name, String description, Map<String, String> tags, AtomicLong value) {
        MetricName metricName = metrics.metricName(name, GROUP, description, tags);
        metrics.addMetric(metricName, (Measurable) (config, now) -> value.get());
    }

    void followed(long generation) {
        followed.incrementAndGet();
        followedGeneration.set(generation);
    }

    void fellBack(FallbackReason reason) {
        fallbacks.get(reason).incrementAndGet();
    }

    public long followedCount() {
        return followed.get();
    }

    public long fallbackCount(FallbackReason reason) {
        return fallbacks.get(reason).get();
    }

    @Override
    public void close() {
        metrics.close();
    }
}
