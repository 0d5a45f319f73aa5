package io.smoothscale.streams;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Map;
import java.util.Properties;
import org.apache.kafka.common.serialization.Serdes;
import org.apache.kafka.streams.KafkaStreams;
import org.apache.kafka.streams.StreamsBuilder;
import org.apache.kafka.streams.StreamsConfig;
import org.apache.kafka.streams.Topology;
import org.apache.kafka.streams.kstream.Consumed;
import org.apache.kafka.streams.kstream.Materialized;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * A Kafka Streams app that adopts smoothscale by its settings alone: {@code new KafkaStreams(topology, props)}
 * starts the bridge (no broker is needed for Kafka Streams to build its clients), refuses what conflicts, and
 * closes it with Kafka Streams.
 */
class ConfigurationOnlyTest {
    private static final Duration CLOSE = Duration.ofSeconds(2);

    @TempDir
    Path stateDir;

    static Topology topology() {
        StreamsBuilder builder = new StreamsBuilder();
        builder.stream("orders", Consumed.with(Serdes.String(), Serdes.String())).groupByKey()
            .count(Materialized.as("counts"));
        return builder.build();
    }

    private Properties app(String pod) throws IOException {
        return app(stateDir, pod);
    }

    /** The settings of pod {@code pod} adopting smoothscale alone, its state under {@code stateDir}; no broker,
     * no API server, the bridge's own endpoint on any free port. */
    static Properties app(Path stateDir, String pod) throws IOException {
        Properties props = new Properties();
        props.put(StreamsConfig.APPLICATION_ID_CONFIG, "orders");
        props.put(StreamsConfig.BOOTSTRAP_SERVERS_CONFIG, "127.0.0.1:1");
        // A state directory per client: one whose construction was refused keeps its directory's lock.
        props.put(StreamsConfig.STATE_DIR_CONFIG, Files.createTempDirectory(stateDir, pod).toString());
        props.put(StreamsConfig.METRIC_REPORTER_CLASSES_CONFIG, SmoothscaleMetricsReporter.class.getName());
        props.put(StreamsConfig.TASK_ASSIGNOR_CLASS_CONFIG, OperatorTaskAssignor.class.getName());
        props.put(StreamsConfig.CLIENT_ID_CONFIG, pod);
        props.put(BridgeSettings.POD, pod);
        props.put(BridgeSettings.NAMESPACE, "streams");
        props.put(BridgeSettings.APP, "orders");
        props.put(BridgeSettings.METRICS_HOST, "127.0.0.1");
        props.put(BridgeSettings.METRICS_PORT, "0");
        // The tests' class path has Micrometer's Prometheus registry (MicrometerMetricsTest): the bridge's own endpoint.
        props.put(BridgeSettings.METRICS_MICROMETER, "false");
        // No API server: the watch fails, and the leader would fall back until it reads a publication.
        Path kubeconfig = Files.writeString(stateDir.resolve("kubeconfig.json"),
            "{\"clusters\":[{\"name\":\"c\",\"cluster\":{\"server\":\"http://127.0.0.1:1\"}}],\"users\":[],\"contexts\":[]}");
        props.put(BridgeSettings.KUBECONFIG, kubeconfig.toString());
        return props;
    }

    @Test
    void constructingKafkaStreamsStartsTheBridgeAndClosingItStopsIt() throws Exception {
        Properties props = app("orders-7");
        props.put(StreamsConfig.NUM_STREAM_THREADS_CONFIG, 2);
        KafkaStreams streams = new KafkaStreams(topology(), props);
        try {
            SmoothscaleBridge bridge = ReportedClient.bridgeOf("orders-7").orElseThrow();
            assertEquals("streams/orders-assignment", bridge.configMapName());
            HttpResponse<String> scrape = HttpClient.newHttpClient().send(
                HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + bridge.metricsPort() + "/metrics")).build(),
                HttpResponse.BodyHandlers.ofString());
            assertEquals(200, scrape.statusCode());
            assertTrue(scrape.body().contains("smoothscale_bridge_assignor_followed_total"), scrape.body());
            assertTrue(ReportedClient.of("orders-7").rebalanceNow(),
                "both stream threads' main consumers handed over their follow-up rebalance schedule");
            // The assignor Kafka Streams builds on the leader finds the bridge by its consumer's client id.
            assertTrue(OperatorTaskAssignor.bridgeFor(Map.of(StreamsConfig.CLIENT_ID_CONFIG,
                "orders-7-StreamThread-2-consumer")).isPresent());
        } finally {
            streams.close(CLOSE);
        }
        assertFalse(ReportedClient.bridgeOf("orders-7").isPresent(), "closing Kafka Streams closes the bridge");
    }

    @Test
    void aClientIdThatIsNotThePodsIsRefusedWhenKafkaStreamsIsBuilt() throws Exception {
        Properties props = app("orders-8");
        props.remove(StreamsConfig.CLIENT_ID_CONFIG);
        Exception error = assertThrows(Exception.class, () -> new KafkaStreams(topology(), props).close());
        assertTrue(messages(error).contains("client.id is 'orders-"), messages(error));
        assertTrue(messages(error).contains("${env:SMOOTHSCALE_POD_NAME}"), messages(error));
        assertFalse(ReportedClient.bridgeOf("orders-8").isPresent());
    }

    @Test
    void aReporterWithoutTheAssignorIsRefused() throws Exception {
        Properties props = app("orders-9");
        props.remove(StreamsConfig.TASK_ASSIGNOR_CLASS_CONFIG);
        Exception error = assertThrows(Exception.class, () -> new KafkaStreams(topology(), props).close());
        assertTrue(messages(error).contains("task.assignor.class is not set"), messages(error));
        props.put(StreamsConfig.TASK_ASSIGNOR_CLASS_CONFIG, "org.example.OtherAssignor");
        props.put(StreamsConfig.STATE_DIR_CONFIG, Files.createTempDirectory(stateDir, "other").toString());
        error = assertThrows(Exception.class, () -> new KafkaStreams(topology(), props).close());
        assertTrue(messages(error).contains("task.assignor.class is 'org.example.OtherAssignor'"), messages(error));
    }

    @Test
    void thePodsNameCanComeFromTheEnvironmentThroughKafkasOwnConfigProvider() throws Exception {
        Properties props = app("ignored");
        String pod = System.getenv().getOrDefault("HOME", "");
        props.put("config.providers", "env");
        props.put("config.providers.env.class", "org.apache.kafka.common.config.provider.EnvVarConfigProvider");
        props.put(StreamsConfig.CLIENT_ID_CONFIG, "${env:HOME}");
        props.put(BridgeSettings.POD, "${env:HOME}");
        KafkaStreams streams = new KafkaStreams(topology(), props);
        try {
            assertTrue(ReportedClient.bridgeOf(pod).isPresent(), "client.id resolved to the variable's value");
        } finally {
            streams.close(CLOSE);
        }
    }

    private static String messages(Throwable error) {
        StringBuilder text = new StringBuilder();
        for (Throwable cause = error; cause != null; cause = cause.getCause()) {
            text.append(cause).append('\n');
        }
        return text.toString();
    }
}
