package io.smoothscale.sample;

import io.smoothscale.streams.SmoothscaleBridge;
import java.time.Duration;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.CountDownLatch;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.streams.KafkaStreams;
import org.apache.kafka.streams.StreamsBuilder;
import org.apache.kafka.streams.StreamsConfig;
import org.apache.kafka.streams.Topology;
import org.apache.kafka.streams.errors.StreamsUncaughtExceptionHandler.StreamThreadExceptionResponse;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The sample Kafka Streams app the sandbox runs in each pod ({@link OrdersTopology}), adopting smoothscale
 * through the bridge's code API; processing is exactly-once (v2), so each input record is counted once in the
 * output.
 *
 * <p>Settings come from the pod's environment: {@code KAFKA_BOOTSTRAP_SERVERS}, {@code SMOOTHSCALE_APP} (the
 * application id), {@code SMOOTHSCALE_STATE_DIR}, {@code ORDERS_TOPIC} / {@code TOTALS_TOPIC}, any Streams
 * property as {@code STREAMS_<NAME>} ({@code STREAMS_NUM_STREAM_THREADS=2} is {@code num.stream.threads=2}),
 * {@code SMOOTHSCALE_BRIDGE=off} to run with Kafka's own assignor (the head-to-head's baseline), or
 * {@code SMOOTHSCALE_BRIDGE=properties} to run {@link PlainOrdersApp}, which adopts smoothscale by its settings
 * alone (the code API is this class's default), {@code ORDER_STORE_LOGGING=off} to keep
 * {@code order-versions} without a changelog, and {@code REPARTITION_PARTITIONS=N} to fix the repartition
 * topic's partitions (with the unlogged store: input partitions can be added while the app runs). Tests
 * may make it misbehave ({@link Faults}: a slow record, an exception, the uncaught exception handler's response).
 */
public final class OrdersApp {
    private static final Logger LOG = LoggerFactory.getLogger(OrdersApp.class);

    private OrdersApp() {}

    /**
     * The topology; {@code orderStoreLogged=false} disables logging on {@code order-versions} (env
     * {@code ORDER_STORE_LOGGING=off}): subtopology 0 keeps its state without a changelog, so Kafka gives its
     * tasks no standby (what the operator must plan for when a written topology calls it stateful);
     * {@code repartitionPartitions > 0} (env {@code REPARTITION_PARTITIONS}) fixes the repartition topic's size.
     */
    static Topology topology(String ordersTopic, String totalsTopic, Faults faults, boolean orderStoreLogged,
                             int repartitionPartitions) {
        StreamsBuilder builder = new StreamsBuilder();
        OrdersTopology.build(builder, ordersTopic, totalsTopic, faults::beforeProcessing, orderStoreLogged,
            repartitionPartitions);
        return builder.build();
    }

    static Properties properties(Map<String, String> env) {
        Properties props = new Properties();
        props.put(StreamsConfig.APPLICATION_ID_CONFIG, required(env, "SMOOTHSCALE_APP"));
        props.put(StreamsConfig.BOOTSTRAP_SERVERS_CONFIG, required(env, "KAFKA_BOOTSTRAP_SERVERS"));
        props.put(StreamsConfig.PROCESSING_GUARANTEE_CONFIG, StreamsConfig.EXACTLY_ONCE_V2);
        props.put(StreamsConfig.REPLICATION_FACTOR_CONFIG, 1);
        props.put(StreamsConfig.COMMIT_INTERVAL_MS_CONFIG, 100);
        if (!"off".equals(env.get("SMOOTHSCALE_BRIDGE"))) {
            // What the bridge recommends for short hand-overs, set by the app (README, "Adopting smoothscale"):
            // per-task process rates are recorded at DEBUG only; a member that a rebalance does not concern
            // learns of it at its next heartbeat; a caught-up warmup runs once a restore fetch confirms it.
            props.put(StreamsConfig.METRICS_RECORDING_LEVEL_CONFIG, "DEBUG");
            props.put(StreamsConfig.mainConsumerPrefix(ConsumerConfig.HEARTBEAT_INTERVAL_MS_CONFIG), 200);
            props.put(StreamsConfig.restoreConsumerPrefix(ConsumerConfig.FETCH_MAX_WAIT_MS_CONFIG), 100);
        }
        if (env.containsKey("SMOOTHSCALE_STATE_DIR")) {
            props.put(StreamsConfig.STATE_DIR_CONFIG, env.get("SMOOTHSCALE_STATE_DIR"));
        }
        props.putAll(environmentSettings(env));
        return props;
    }

    /** Any Streams setting as {@code STREAMS_<NAME>}: {@code STREAMS_NUM_STREAM_THREADS=2} is {@code num.stream.threads=2}. */
    static Map<String, String> environmentSettings(Map<String, String> env) {
        Map<String, String> settings = new java.util.TreeMap<>();
        env.forEach((name, value) -> {
            if (name.startsWith("STREAMS_")) {
                settings.put(name.substring("STREAMS_".length()).toLowerCase(java.util.Locale.ROOT).replace('_', '.'), value);
            }
        });
        return settings;
    }

    private static String required(Map<String, String> env, String name) {
        String value = env.get(name);
        if (value == null || value.isBlank()) {
            throw new IllegalArgumentException(name + " must be set");
        }
        return value;
    }

    public static void main(String[] args) throws InterruptedException {
        Map<String, String> env = System.getenv();
        if ("properties".equals(env.get("SMOOTHSCALE_BRIDGE"))) {
            PlainOrdersApp.main(args);  // the same topology, adopting smoothscale by its settings alone
            return;
        }
        Topology topology = topology(env.getOrDefault("ORDERS_TOPIC", "orders"), env.getOrDefault("TOTALS_TOPIC", "customer-totals"),
            Faults.fromEnvironment(env), !"off".equals(env.get("ORDER_STORE_LOGGING")),
            Integer.parseInt(env.getOrDefault("REPARTITION_PARTITIONS", "0")));
        StreamThreadExceptionResponse response = Faults.exceptionResponse(env);
        Properties props = properties(env);
        boolean bridged = !"off".equals(env.get("SMOOTHSCALE_BRIDGE"));
        SmoothscaleBridge bridge = bridged ? SmoothscaleBridge.fromProperties(props) : null;
        KafkaStreams streams = bridged
            ? new KafkaStreams(topology, bridge.configure(props), bridge.clientSupplier())
            : new KafkaStreams(topology, props);
        CountDownLatch stopped = new CountDownLatch(1);
        streams.setUncaughtExceptionHandler(error -> {
            LOG.error("Stream thread failed; responding {}", response, error);
            return response;
        });
        streams.setStateListener((now, before) -> {
            if (now == KafkaStreams.State.NOT_RUNNING || now == KafkaStreams.State.ERROR) {
                stopped.countDown();
            }
        });
        Runtime.getRuntime().addShutdownHook(new Thread(() -> {
            streams.close(Duration.ofSeconds(20));
            if (bridge != null) {
                bridge.close();
            }
        }, "orders-app-shutdown"));
        try {
            if (bridge != null) {
                bridge.start(streams, topology);
            }
            LOG.info("Starting orders app {} with topology {}", props.get(StreamsConfig.APPLICATION_ID_CONFIG), topology.describe());
            streams.start();
        } catch (RuntimeException error) {
            LOG.error("Orders app failed to start", error);
            System.exit(2);  // the shutdown hook closes what was opened
        }
        stopped.await();
        LOG.info("Orders app stopped in state {}", streams.state());
        System.exit(streams.state() == KafkaStreams.State.ERROR ? 1 : 0);
    }
}
