package io.smoothscale.streams;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.HashMap;
import java.util.Map;
import java.util.Optional;
import java.util.Properties;
import org.apache.kafka.streams.StreamsConfig;
import org.apache.kafka.streams.processor.assignment.assignors.StickyTaskAssignor;
import org.junit.jupiter.api.Test;

class SmoothscaleBridgeTest {
    private static final Map<String, String> POD_ENV = Map.of(
        "SMOOTHSCALE_POD_NAME", "orders-3", "SMOOTHSCALE_NAMESPACE", "streams", "SMOOTHSCALE_APP", "orders");

    private static SmoothscaleBridge bridge() {
        return new SmoothscaleBridge(BridgeSettings.of(Map.of(), POD_ENV));
    }

    /** A bridge for pod {@code pod} of app {@code orders} in namespace {@code ns}, metrics on any free port. */
    static SmoothscaleBridge bridgeOf(String pod) {
        return new SmoothscaleBridge(new BridgeSettings(pod, "ns", "orders-assignment", "127.0.0.1", 0, Optional.empty(),
            false));
    }

    @Test
    void thePodsEnvironmentNamesItsConfigMapAndAMetricsPortNoFrameworkUses() {
        BridgeSettings settings = BridgeSettings.of(Map.of(), POD_ENV);
        assertEquals("orders-3", settings.pod());
        assertEquals("orders-assignment", settings.configMap());
        assertEquals(9494, settings.metricsPort());
        assertEquals("streams/orders-assignment", new SmoothscaleBridge(settings).configMapName());
    }

    @Test
    void theAppsSmoothscalePropertiesWinOverTheEnvironment() {
        Map<String, Object> app = Map.of("smoothscale.metrics.port", "9100", "smoothscale.assignment.configmap", "x",
            "smoothscale.namespace", "blue");
        BridgeSettings settings = BridgeSettings.of(app, POD_ENV);
        assertEquals(9100, settings.metricsPort());
        assertEquals("x", settings.configMap());
        assertEquals("blue", settings.namespace());
        assertEquals("orders-3", settings.pod(), "what the app did not set comes from the pod's environment");
    }

    @Test
    void aMissingOrBadSettingIsNamed() {
        IllegalArgumentException missing = assertThrows(IllegalArgumentException.class,
            () -> BridgeSettings.of(Map.of(), Map.of("SMOOTHSCALE_POD_NAME", "orders-3")));
        assertTrue(missing.getMessage().startsWith("smoothscale.namespace is not set (nor SMOOTHSCALE_NAMESPACE)"),
            missing.getMessage());
        Map<String, String> env = new HashMap<>(POD_ENV);
        env.put("SMOOTHSCALE_METRICS_PORT", "http");
        IllegalArgumentException port = assertThrows(IllegalArgumentException.class, () -> BridgeSettings.of(Map.of(), env));
        assertTrue(port.getMessage().contains("smoothscale.metrics.port (SMOOTHSCALE_METRICS_PORT) must be a port number"),
            port.getMessage());
    }

    @Test
    void configureAddsWhatTheBridgeNeedsAndChangesNothingTheAppSet() {
        SmoothscaleBridge bridge = bridge();
        Properties app = ordersApp();
        app.put(StreamsConfig.METRICS_RECORDING_LEVEL_CONFIG, "INFO");

        Properties props = bridge.configure(app);

        assertEquals("orders-3", props.get(StreamsConfig.CLIENT_ID_CONFIG));
        assertEquals(OperatorTaskAssignor.class.getName(), props.get(StreamsConfig.TASK_ASSIGNOR_CLASS_CONFIG));
        assertSame(bridge, props.get(SmoothscaleBridge.CONFIG_KEY));
        assertEquals("INFO", props.get(StreamsConfig.METRICS_RECORDING_LEVEL_CONFIG));
        assertFalse(props.containsKey(StreamsConfig.mainConsumerPrefix("heartbeat.interval.ms")),
            "no consumer setting is added behind the app's back");
        assertEquals(3, app.size(), "the app's own properties are left as they were");
        // Kafka Streams accepts the result and hands the bridge to the assignor it builds.
        assertSame(bridge, new StreamsConfig(props).originals().get(SmoothscaleBridge.CONFIG_KEY));
    }

    @Test
    void theAppMayNameTheBridgesOwnAssignorAndThePodsName() {
        Properties app = ordersApp();
        app.put(StreamsConfig.TASK_ASSIGNOR_CLASS_CONFIG, OperatorTaskAssignor.class);
        app.put(StreamsConfig.CLIENT_ID_CONFIG, "orders-3");
        assertSame(OperatorTaskAssignor.class, bridge().configure(app).get(StreamsConfig.TASK_ASSIGNOR_CLASS_CONFIG));
    }

    private static String refusal(String property, Object value) {
        Properties app = ordersApp();
        app.put(property, value);
        return assertThrows(IllegalArgumentException.class, () -> bridge().configure(app)).getMessage();
    }

    @Test
    void aConflictingSettingIsRefusedWithWhatToDo() {
        String assignor = refusal(StreamsConfig.TASK_ASSIGNOR_CLASS_CONFIG, StickyTaskAssignor.class.getName());
        assertTrue(assignor.startsWith("task.assignor.class is '" + StickyTaskAssignor.class.getName() + "'"), assignor);
        assertTrue(assignor.contains("remove the setting"), assignor);
        String clientId = refusal(StreamsConfig.CLIENT_ID_CONFIG, "orders-service");
        assertTrue(clientId.contains("must be the pod's name 'orders-3'"), clientId);
        String supplier = refusal(StreamsConfig.DEFAULT_CLIENT_SUPPLIER_CONFIG, "com.example.Supplier");
        assertTrue(supplier.startsWith("default.client.supplier is 'com.example.Supplier'"), supplier);
        String protocol = refusal("group.protocol", "streams");
        assertTrue(protocol.contains("group.protocol=classic") && protocol.contains("broker-side assignor"), protocol);
    }

    /** The sample app's own properties: its id and its brokers. */
    private static Properties ordersApp() {
        Properties app = new Properties();
        app.put(StreamsConfig.APPLICATION_ID_CONFIG, "orders");
        app.put(StreamsConfig.BOOTSTRAP_SERVERS_CONFIG, "127.0.0.1:9092");
        return app;
    }
}
