package io.smoothscale.streams;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.Map;
import java.util.Properties;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.streams.StreamsConfig;
import org.junit.jupiter.api.Test;

class SmoothscaleBridgeTest {
    private static final Map<String, String> POD_ENV = Map.of(
        "SMOOTHSCALE_POD_NAME", "orders-3", "SMOOTHSCALE_NAMESPACE", "streams", "SMOOTHSCALE_APP", "orders");

    @Test
    void thePodsEnvironmentNamesItsConfigMapAndMetricsPort() {
        SmoothscaleBridge bridge = SmoothscaleBridge.fromEnvironment(POD_ENV);
        assertEquals("orders-3", bridge.pod());
        assertEquals("streams/orders-assignment", bridge.configMapName());
    }

    @Test
    void aMissingOrBadVariableIsNamed() {
        IllegalArgumentException missing = assertThrows(IllegalArgumentException.class,
            () -> SmoothscaleBridge.fromEnvironment(Map.of("SMOOTHSCALE_POD_NAME", "orders-3")));
        assertTrue(missing.getMessage().startsWith("SMOOTHSCALE_NAMESPACE is not set"), missing.getMessage());
        Map<String, String> env = new java.util.HashMap<>(POD_ENV);
        env.put("SMOOTHSCALE_METRICS_PORT", "http");
        IllegalArgumentException port = assertThrows(IllegalArgumentException.class,
            () -> SmoothscaleBridge.fromEnvironment(env));
        assertTrue(port.getMessage().contains("SMOOTHSCALE_METRICS_PORT must be a port number"), port.getMessage());
    }

    @Test
    void configureNamesTheClientAfterThePodAndInstallsTheAssignor() {
        SmoothscaleBridge bridge = SmoothscaleBridge.fromEnvironment(POD_ENV);
        Properties app = ordersApp();

        Properties props = bridge.configure(app);

        assertEquals("orders-3", props.get(StreamsConfig.CLIENT_ID_CONFIG));
        assertEquals(OperatorTaskAssignor.class.getName(), props.get(StreamsConfig.TASK_ASSIGNOR_CLASS_CONFIG));
        assertSame(bridge, props.get(SmoothscaleBridge.CONFIG_KEY));
        assertEquals("DEBUG", props.get(StreamsConfig.METRICS_RECORDING_LEVEL_CONFIG));
        assertEquals("200", String.valueOf(new StreamsConfig(props).getMainConsumerConfigs("orders", "c", 0)
            .get(ConsumerConfig.HEARTBEAT_INTERVAL_MS_CONFIG)), "rebalances reach every member within 0.2 s");
        assertEquals("100", String.valueOf(new StreamsConfig(props).getRestoreConsumerConfigs("c")
            .get(ConsumerConfig.FETCH_MAX_WAIT_MS_CONFIG)));
        assertEquals(2, app.size(), "the app's own properties are left as they were");
        // Kafka Streams accepts the result and hands the bridge to the assignor it builds.
        assertSame(bridge, new StreamsConfig(props).originals().get(SmoothscaleBridge.CONFIG_KEY));
    }

    @Test
    void anAppsOwnHeartbeatIntervalIsKept() {
        SmoothscaleBridge bridge = SmoothscaleBridge.fromEnvironment(POD_ENV);
        Properties app = ordersApp();
        app.put(StreamsConfig.consumerPrefix(ConsumerConfig.HEARTBEAT_INTERVAL_MS_CONFIG), "1000");

        Properties props = bridge.configure(app);

        assertEquals("1000", String.valueOf(new StreamsConfig(props).getMainConsumerConfigs("orders", "c", 0)
            .get(ConsumerConfig.HEARTBEAT_INTERVAL_MS_CONFIG)));
    }

    @Test
    void aClientIdThatIsNotThePodsNameIsRefused() {
        SmoothscaleBridge bridge = SmoothscaleBridge.fromEnvironment(POD_ENV);
        Properties app = new Properties();
        app.put(StreamsConfig.CLIENT_ID_CONFIG, "orders-service");
        IllegalArgumentException error = assertThrows(IllegalArgumentException.class, () -> bridge.configure(app));
        assertTrue(error.getMessage().contains("must be the pod's name 'orders-3'"), error.getMessage());
    }

    /** The sample app's own properties: its id and its brokers. */
    private static Properties ordersApp() {
        Properties app = new Properties();
        app.put(StreamsConfig.APPLICATION_ID_CONFIG, "orders");
        app.put(StreamsConfig.BOOTSTRAP_SERVERS_CONFIG, "127.0.0.1:9092");
        return app;
    }
}
