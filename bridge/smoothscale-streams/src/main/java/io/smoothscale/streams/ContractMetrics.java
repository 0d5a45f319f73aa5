package io.smoothscale.streams;

import io.prometheus.metrics.core.metrics.GaugeWithCallback;
import io.prometheus.metrics.model.registry.PrometheusRegistry;
import java.util.Map;
import java.util.TreeMap;
import java.util.function.LongSupplier;
import java.util.function.Supplier;
import org.apache.kafka.common.Metric;
import org.apache.kafka.common.MetricName;

/**
 * The metrics every pod of a StreamsApp exposes for the operator (Contract 3), read from its {@link TaskSource}
 * at each scrape: {@code smoothscale_task_lag} and {@code smoothscale_task_changelog_end_offset} for every task
 * with local state (active or standby, summed over the task's stores), {@code smoothscale_task_process_rate}
 * for every active task, {@code smoothscale_assignment_generation}, the generation this instance runs, and
 * {@code smoothscale_contract_version}, the contract version they follow ({@link PublicationCodec#CONTRACT_VERSION}:
 * an operator of an older one refuses them, naming both versions).
 *
 * <p>The process rate is Kafka Streams' own task-level {@code process-rate} ({@code stream-task-metrics}),
 * which Kafka records only at {@code metrics.recording.level=DEBUG}: without it the gauge reports no task
 * (the app chooses the level: DEBUG also records RocksDB statistics, a cost; see the README).
 */
public final class ContractMetrics {
    public static final String TASK_LAG = "smoothscale_task_lag";
    public static final String CHANGELOG_END_OFFSET = "smoothscale_task_changelog_end_offset";
    public static final String GENERATION = "smoothscale_assignment_generation";
    public static final String PROCESS_RATE = "smoothscale_task_process_rate";
    public static final String CONTRACT_VERSION = "smoothscale_contract_version";
    public static final String TASK_LABEL = "task";

    ContractMetrics(TaskSource tasks, LongSupplier runningGeneration, PrometheusRegistry registry) {
        GaugeWithCallback.builder().name(TASK_LAG)
            .help("Offsets this pod's state of the task is behind its changelog end (every task it has state for).")
            .labelNames(TASK_LABEL)
            .callback(callback -> tasks.states().forEach((task, state) -> callback.call(state.lag(), task)))
            .register(registry);
        GaugeWithCallback.builder().name(CHANGELOG_END_OFFSET)
            .help("End offset of the task's changelog, as this pod last saw it.")
            .labelNames(TASK_LABEL)
            .callback(callback -> tasks.states().forEach((task, state) -> callback.call(state.endOffset(), task)))
            .register(registry);
        GaugeWithCallback.builder().name(PROCESS_RATE)
            .help("Records per second this pod processes for the task (0 when it does not process it).")
            .labelNames(TASK_LABEL)
            .callback(callback -> tasks.processRates().forEach((task, rate) -> callback.call(rate, task)))
            .register(registry);
        GaugeWithCallback.builder().name(GENERATION)
            .help("The last assignment generation this pod has fully applied.")
            .callback(callback -> {
                long generation = runningGeneration.getAsLong();
                if (generation >= 0) {
                    callback.call(generation);
                }
            })
            .register(registry);
        GaugeWithCallback.builder().name(CONTRACT_VERSION)
            .help("The version of the smoothscale contract these metrics follow.")
            .callback(callback -> callback.call(PublicationCodec.CONTRACT_VERSION))
            .register(registry);
    }

    /** Per task id, the sum over stream threads of Kafka Streams' task-level process rate. */
    static Map<String, Double> processRates(Supplier<Map<MetricName, ? extends Metric>> metrics) {
        Map<String, Double> rates = new TreeMap<>();
        metrics.get().forEach((name, metric) -> {
            if (name.name().equals("process-rate") && name.group().equals("stream-task-metrics")
                && name.tags().containsKey("task-id") && metric.metricValue() instanceof Double rate) {
                rates.merge(name.tags().get("task-id"), rate.isNaN() ? 0.0 : rate, Double::sum);
            }
        });
        return rates;
    }
}
