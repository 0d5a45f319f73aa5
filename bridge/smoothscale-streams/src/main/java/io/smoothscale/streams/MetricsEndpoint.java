package io.smoothscale.streams;

import io.prometheus.metrics.exporter.httpserver.HTTPServer;
import io.prometheus.metrics.model.registry.PrometheusRegistry;
import java.io.IOException;
import java.io.UncheckedIOException;

/**
 * Where the operator scrapes the bridge's metrics: the app's own Prometheus endpoint through Micrometer when
 * the app serves one ({@link MicrometerMetrics}: Spring Boot Actuator, Quarkus' micrometer-registry-prometheus),
 * else the bridge's own endpoint on {@code smoothscale.metrics.port}.
 */
interface MetricsEndpoint extends AutoCloseable {
    /** Where the metrics are served, for the log. */
    String describe();

    /** The port of the bridge's own endpoint; -1 when the app's endpoint serves them. */
    int port();

    @Override
    void close();

    /**
     * Micrometer's global registry when the app has Micrometer and its Prometheus registry on the class path
     * (Spring Boot Actuator and Quarkus then serve that registry, which they add to the global one: Quarkus only
     * after Kafka Streams is built, so the class path decides, not the registry's presence), and the settings
     * allow it; else the bridge's own HTTP endpoint.
     */
    static MetricsEndpoint start(BridgeSettings settings, PrometheusRegistry registry) {
        if (settings.micrometer() && onClassPath("io.micrometer.core.instrument.Metrics")
            && MicrometerMetrics.PROMETHEUS_REGISTRIES.stream().anyMatch(MetricsEndpoint::onClassPath)) {
            return MicrometerMetrics.bind(registry);
        }
        return serve(settings, registry);
    }

    private static boolean onClassPath(String className) {
        try {
            Class.forName(className, false, MetricsEndpoint.class.getClassLoader());
            return true;
        } catch (ClassNotFoundException | LinkageError absent) {
            return false;
        }
    }

    /** The bridge's own endpoint: Prometheus text on {@code smoothscale.metrics.host:port}, any path. */
    static MetricsEndpoint serve(BridgeSettings settings, PrometheusRegistry registry) {
        HTTPServer server;
        try {
            server = HTTPServer.builder().hostname(settings.metricsHost()).port(settings.metricsPort())
                .registry(registry).buildAndStart();
        } catch (IOException error) {
            throw new UncheckedIOException("cannot serve metrics on " + settings.metricsHost() + ":"
                + settings.metricsPort() + " (set " + BridgeSettings.METRICS_PORT + ")", error);
        }
        return new MetricsEndpoint() {
            @Override
            public String describe() {
                return settings.metricsHost() + ":" + server.getPort();
            }

            @Override
            public int port() {
                return server.getPort();
            }

            @Override
            public void close() {
                server.close();
            }
        };
    }
}
