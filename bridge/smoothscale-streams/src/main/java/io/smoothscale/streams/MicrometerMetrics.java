package io.smoothscale.streams;

import io.micrometer.core.instrument.FunctionCounter;
import io.micrometer.core.instrument.Gauge;
import io.micrometer.core.instrument.Meter;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.Metrics;
import io.micrometer.core.instrument.Tags;
import io.micrometer.core.instrument.composite.CompositeMeterRegistry;
import io.prometheus.metrics.model.registry.PrometheusRegistry;
import io.prometheus.metrics.model.snapshots.CounterSnapshot;
import io.prometheus.metrics.model.snapshots.DataPointSnapshot;
import io.prometheus.metrics.model.snapshots.GaugeSnapshot;
import io.prometheus.metrics.model.snapshots.Label;
import io.prometheus.metrics.model.snapshots.MetricSnapshot;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The bridge's metrics in the app's own Micrometer registry, for apps that already serve Prometheus through
 * Micrometer (Spring Boot Actuator's {@code /actuator/prometheus}, Quarkus' {@code /q/metrics}): the operator
 * then scrapes that endpoint, and the bridge opens no port of its own. Only loaded when Micrometer is on the
 * app's class path with its Prometheus registry ({@link MetricsEndpoint}); the bridge's POM declares it
 * {@code provided}, so an app without Micrometer gets none.
 *
 * <p>Every series of the bridge's own registry becomes a meter of Micrometer's global registry
 * ({@code Metrics.globalRegistry}, which Spring Boot and Quarkus feed to their registries): a gauge
 * {@code smoothscale_task_lag{task}} becomes the gauge {@code smoothscale.task.lag} tagged {@code task}, which
 * Micrometer's Prometheus registry writes back as {@code smoothscale_task_lag{task="..."}}; a counter keeps
 * its {@code _total}. Values are read at each scrape (from a snapshot at most {@value #FRESH_MILLIS} ms old);
 * which series exist (the tasks the pod holds) is brought up to date every {@value #SYNC_MILLIS} ms, and at
 * once when a read finds the series changed. Until its meter is gone, a series that went away reads as
 * {@link #goneValue}: never NaN (which the operator refuses), and never a caught-up lag for a task the pod
 * has closed (a pod that kept reporting lag 0 for a task it had just handed over had the operator move the
 * task straight back onto it, with no warmup).
 */
final class MicrometerMetrics implements MetricsEndpoint {
    static final long SYNC_MILLIS = 1_000;
    static final long FRESH_MILLIS = 200;
    /** How long after start-up a Prometheus registry must have joined the target, else a warning. */
    static final long PROMETHEUS_JOIN_MILLIS = 60_000;
    /** The Prometheus registries of Micrometer 1.13 and later, and of earlier versions. */
    static final List<String> PROMETHEUS_REGISTRIES = List.of(
        "io.micrometer.prometheusmetrics.PrometheusMeterRegistry",
        "io.micrometer.prometheus.PrometheusMeterRegistry");
    private static final Logger LOG = LoggerFactory.getLogger(MicrometerMetrics.class);

    /** One series: its metric's name and its labels. */
    private record Series(String name, Map<String, String> labels) {}

    private final PrometheusRegistry source;
    private final MeterRegistry target;
    private final Map<Series, Meter> meters = new ConcurrentHashMap<>();
    /**
     * Every series' last value, kept after the series has gone: a scrape running beside {@link #synchronize}
     * may still read a gone task's lag after its changelog end's meter was removed, and must find that end
     * ({@link #goneValue}). Bounded by the series the app ever had (its tasks times the bridge's metrics).
     */
    private final Map<Series, Double> lastValues = new ConcurrentHashMap<>();
    private final ScheduledExecutorService sync = Executors.newSingleThreadScheduledExecutor(runnable -> {
        Thread thread = new Thread(runnable, "smoothscale-micrometer");
        thread.setDaemon(true);
        return thread;
    });
    private volatile Map<Series, Double> snapshot = Map.of();
    private volatile long snapshotAt;

    private MicrometerMetrics(PrometheusRegistry source, MeterRegistry target, long syncMillis) {
        this.source = source;
        this.target = target;
        synchronize();
        sync.scheduleWithFixedDelay(this::synchronize, syncMillis, syncMillis, TimeUnit.MILLISECONDS);
        sync.schedule(() -> {
            if (!servesPrometheus(target)) {
                LOG.warn("The bridge's metrics are in Micrometer's global registry, but no Prometheus registry joined"
                    + " it within {} s: the operator cannot scrape them. Let the app's framework add its registries"
                    + " to the global one (Spring Boot: management.metrics.use-global-registry=true, its default),"
                    + " or set {}=false for the bridge's own endpoint", PROMETHEUS_JOIN_MILLIS / 1000,
                    BridgeSettings.METRICS_MICROMETER);
            }
        }, PROMETHEUS_JOIN_MILLIS, TimeUnit.MILLISECONDS);
    }

    /** The bridge's metrics, from {@code source}, in Micrometer's global registry. */
    static MicrometerMetrics bind(PrometheusRegistry source) {
        return new MicrometerMetrics(source, Metrics.globalRegistry, SYNC_MILLIS);
    }

    /** The bridge's metrics in {@code target} (tests: a registry of their own), its series synchronised
     * every {@code syncMillis} and whenever a read finds them changed. */
    static MicrometerMetrics bind(PrometheusRegistry source, MeterRegistry target, long syncMillis) {
        return new MicrometerMetrics(source, target, syncMillis);
    }

    private static boolean servesPrometheus(MeterRegistry registry) {
        if (registry instanceof CompositeMeterRegistry composite) {
            return composite.getRegistries().stream().anyMatch(MicrometerMetrics::servesPrometheus);
        }
        for (Class<?> type = registry.getClass(); type != null; type = type.getSuperclass()) {
            if (PROMETHEUS_REGISTRIES.contains(type.getName())) {
                return true;
            }
        }
        return false;
    }

    /** The meter name of a Prometheus metric: dots for underscores (Micrometer's naming convention). */
    static String meterName(String prometheusName) {
        return prometheusName.replace('_', '.');
    }

    /** The bridge's series now, with each metric's help and kind. */
    private record Reading(Map<Series, Double> values, Map<String, String> help, Set<String> counters) {}

    private Reading read() {
        Map<Series, Double> values = new HashMap<>();
        Map<String, String> help = new HashMap<>();
        Set<String> counters = new HashSet<>();
        for (MetricSnapshot metric : source.scrape()) {
            String name = metric.getMetadata().getName();
            help.put(name, metric.getMetadata().getHelp());
            if (metric instanceof CounterSnapshot) {
                counters.add(name);
            }
            for (DataPointSnapshot point : metric.getDataPoints()) {
                double value;
                if (point instanceof GaugeSnapshot.GaugeDataPointSnapshot gauge) {
                    value = gauge.getValue();
                } else if (point instanceof CounterSnapshot.CounterDataPointSnapshot counter) {
                    value = counter.getValue();
                } else {
                    continue;
                }
                Map<String, String> labels = new TreeMap<>();
                for (Label label : point.getLabels()) {
                    labels.put(label.getName(), label.getValue());
                }
                values.put(new Series(name, labels), value);
            }
        }
        boolean changed = !values.keySet().equals(snapshot.keySet());
        snapshot = values;
        snapshotAt = System.nanoTime();
        lastValues.putAll(values);
        if (changed && !sync.isShutdown()) {
            sync.execute(this::synchronize);  // the meters follow the series now, not at the next tick
        }
        return new Reading(values, help, counters);
    }

    /** Register a meter for every series that appeared, remove those of series that went away. */
    private synchronized void synchronize() {
        Reading now = read();
        now.values().keySet().stream().filter(series -> !meters.containsKey(series)).forEach(series -> meters.put(
            series, register(series, now.help().get(series.name()), now.counters().contains(series.name()))));
        meters.entrySet().removeIf(entry -> {
            if (now.values().containsKey(entry.getKey())) {
                return false;
            }
            target.remove(entry.getValue());
            return true;
        });
    }

    private Meter register(Series series, String help, boolean counter) {
        Tags tags = Tags.empty();
        for (Map.Entry<String, String> label : series.labels().entrySet()) {
            tags = tags.and(label.getKey(), label.getValue());
        }
        if (counter) {
            return FunctionCounter.builder(meterName(series.name()), this, metrics -> metrics.value(series))
                .description(help).tags(tags).register(target);
        }
        return Gauge.builder(meterName(series.name()), this, metrics -> metrics.value(series))
            .description(help).tags(tags).register(target);
    }

    /** The series' value as of at most {@link #FRESH_MILLIS} ago; {@link #goneValue} when it has just gone away. */
    private double value(Series series) {
        if (System.nanoTime() - snapshotAt > TimeUnit.MILLISECONDS.toNanos(FRESH_MILLIS)) {
            read();
        }
        Double value = snapshot.get(series);
        return value != null ? value : goneValue(series);
    }

    /**
     * What a series that went away reads until its meter is removed. A task's lag reads as its whole changelog
     * (the task's last changelog end offset): KIP-441's lag of a client without the task's state, which is
     * what the pod has once it has closed the task, so the operator takes it for no copy at all. Any other
     * series keeps its last value (a counter's total, a changelog's end: true a moment ago, and no decision
     * rests on a stale one).
     */
    private double goneValue(Series series) {
        if (series.name().equals(ContractMetrics.TASK_LAG)) {
            Double end = lastValues.get(new Series(ContractMetrics.CHANGELOG_END_OFFSET, series.labels()));
            return end != null ? end : Long.MAX_VALUE;
        }
        return lastValues.getOrDefault(series, 0.0);
    }

    @Override
    public String describe() {
        return "Micrometer's global registry (the app's Prometheus endpoint)";
    }

    @Override
    public int port() {
        return -1;
    }

    @Override
    public synchronized void close() {
        sync.shutdownNow();
        meters.values().forEach(target::remove);
        meters.clear();
    }
}
