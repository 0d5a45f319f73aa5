package io.smoothscale.streams;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.micrometer.core.instrument.Metrics;
import io.micrometer.prometheusmetrics.PrometheusConfig;
import io.micrometer.prometheusmetrics.PrometheusMeterRegistry;
import io.prometheus.metrics.core.metrics.Counter;
import io.prometheus.metrics.core.metrics.GaugeWithCallback;
import io.prometheus.metrics.model.registry.PrometheusRegistry;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.ConcurrentHashMap;
import org.apache.kafka.streams.KafkaStreams;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The bridge's metrics in the app's Micrometer registry, written out by Micrometer's real Prometheus registry
 * (what Spring Boot Actuator and Quarkus serve): the same names and labels as the bridge's own endpoint.
 */
class MicrometerMetricsTest {
    private static final Duration CLOSE = Duration.ofSeconds(2);

    @TempDir
    Path stateDir;

    private final PrometheusMeterRegistry app = new PrometheusMeterRegistry(PrometheusConfig.DEFAULT);

    @BeforeEach
    void theAppServesPrometheusThroughMicrometer() {
        Metrics.globalRegistry.add(app);
    }

    @AfterEach
    void removeIt() {
        Metrics.globalRegistry.remove(app);
        app.close();
    }

    @Test
    void anAppWithAMicrometerPrometheusRegistryServesTheBridgesMetricsAndTheBridgeOpensNoPort() throws Exception {
        Properties props = ConfigurationOnlyTest.app(stateDir, "orders-11");
        props.remove(BridgeSettings.METRICS_MICROMETER);  // the default: Micrometer's when the app has it
        KafkaStreams streams = new KafkaStreams(ConfigurationOnlyTest.topology(), props);
        try {
            SmoothscaleBridge bridge = ReportedClient.bridgeOf("orders-11").orElseThrow();
            assertEquals(-1, bridge.metricsPort(), "no endpoint of the bridge's own");
            String scrape = app.scrape();
            assertTrue(scrape.contains("smoothscale_bridge_assignor_followed_total 0"), scrape);
            assertTrue(scrape.contains("smoothscale_bridge_assignor_followed_generation -1"), scrape);
        } finally {
            streams.close(CLOSE);
        }
        assertFalse(app.scrape().contains("smoothscale_"), "closing Kafka Streams takes the bridge's meters away");
    }

    @Test
    void settingMicrometerOffKeepsTheBridgesOwnEndpoint() throws Exception {
        Properties props = ConfigurationOnlyTest.app(stateDir, "orders-12");
        props.put(BridgeSettings.METRICS_MICROMETER, "FALSE");
        KafkaStreams streams = new KafkaStreams(ConfigurationOnlyTest.topology(), props);
        try {
            assertTrue(ReportedClient.bridgeOf("orders-12").orElseThrow().metricsPort() > 0);
            assertFalse(app.scrape().contains("smoothscale_"), app.scrape());
        } finally {
            streams.close(CLOSE);
        }
    }

    @Test
    void eachTasksSeriesComesAndGoesWithTheTaskAndCountersKeepTheirTotal() throws Exception {
        Map<String, Long> lags = new ConcurrentHashMap<>(Map.of("0_1", 12L, "1_3", 0L));
        PrometheusRegistry bridge = new PrometheusRegistry();
        GaugeWithCallback.builder().name(ContractMetrics.TASK_LAG).help("lag").labelNames(ContractMetrics.TASK_LABEL)
            .callback(callback -> lags.forEach((task, lag) -> callback.call(lag, task))).register(bridge);
        Counter fallbacks = Counter.builder().name(AssignorMetrics.FALLBACKS).help("fallbacks").labelNames("reason")
            .register(bridge);
        fallbacks.labelValues("unknown_client").inc();
        MicrometerMetrics metrics = MicrometerMetrics.bind(bridge, app, MicrometerMetrics.SYNC_MILLIS);
        try {
            String scrape = app.scrape();
            assertTrue(scrape.contains("smoothscale_task_lag{task=\"0_1\"} 12.0"), scrape);
            assertTrue(scrape.contains("smoothscale_task_lag{task=\"1_3\"} 0.0"), scrape);
            assertTrue(scrape.contains("smoothscale_bridge_assignor_fallbacks_total{reason=\"unknown_client\"} 1.0"),
                scrape);

            lags.put("0_1", 3L);
            Thread.sleep(MicrometerMetrics.FRESH_MILLIS + 50);
            assertTrue(app.scrape().contains("smoothscale_task_lag{task=\"0_1\"} 3.0"), "values are read at scrape");

            lags.remove("1_3");
            lags.put("0_2", 7L);
            long deadline = System.nanoTime() + Duration.ofSeconds(5).toNanos();
            while ((app.scrape().contains("task=\"1_3\"") || !app.scrape().contains("task=\"0_2\""))
                && System.nanoTime() < deadline) {
                Thread.sleep(50);
            }
            scrape = app.scrape();
            assertFalse(scrape.contains("task=\"1_3\""), scrape);
            assertTrue(scrape.contains("smoothscale_task_lag{task=\"0_2\"} 7.0"), scrape);
            assertFalse(scrape.contains("NaN"), "a series is never NaN: the operator refuses it");
        } finally {
            metrics.close();
        }
        assertFalse(app.scrape().contains("smoothscale_"), app.scrape());
    }

    @Test
    void aTaskThePodClosedNeverReadsAsCaughtUp() throws Exception {
        Map<String, Long> lags = new ConcurrentHashMap<>(Map.of("0_1", 12L, "1_3", 0L));
        PrometheusRegistry bridge = new PrometheusRegistry();
        GaugeWithCallback.builder().name(ContractMetrics.TASK_LAG).help("lag").labelNames(ContractMetrics.TASK_LABEL)
            .callback(callback -> lags.forEach((task, lag) -> callback.call(lag, task))).register(bridge);
        GaugeWithCallback.builder().name(ContractMetrics.CHANGELOG_END_OFFSET).help("end")
            .labelNames(ContractMetrics.TASK_LABEL)
            .callback(callback -> lags.keySet().forEach(task -> callback.call(40, task))).register(bridge);
        // No periodic synchronisation within the test: what it sees follows from the reads alone.
        MicrometerMetrics metrics = MicrometerMetrics.bind(bridge, app, Duration.ofHours(1).toMillis());
        try {
            assertTrue(app.scrape().contains("smoothscale_task_lag{task=\"1_3\"} 0.0"), app.scrape());
            lags.remove("1_3");  // the pod hands 1_3 over and closes it
            Thread.sleep(MicrometerMetrics.FRESH_MILLIS + 50);
            long deadline = System.nanoTime() + Duration.ofSeconds(2).toNanos();
            String scrape = app.scrape();
            while (scrape.contains("task=\"1_3\"") && System.nanoTime() < deadline) {
                assertTrue(scrape.contains("smoothscale_task_lag{task=\"1_3\"} 40.0"),
                    "until its meter goes, a closed task's lag is its whole changelog, never its last lag: " + scrape);
                Thread.sleep(20);
                scrape = app.scrape();
            }
            assertFalse(scrape.contains("task=\"1_3\""), "its series go at once, not at the next tick: " + scrape);
            assertTrue(scrape.contains("smoothscale_task_lag{task=\"0_1\"} 12.0"), scrape);
        } finally {
            metrics.close();
        }
    }
}
