package io.smoothscale.sample;

import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.CountDownLatch;
import org.apache.kafka.streams.KafkaStreams;
import org.apache.kafka.streams.StreamsConfig;
import org.apache.kafka.streams.Topology;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The sample app as a team would write it without knowing smoothscale: the orders topology
 * ({@link OrdersTopology}) run by {@code new KafkaStreams(topology, props)}, its settings read from
 * {@code plain-app.properties} (packaged; a file named by the first argument replaces it), any of them
 * overridden by a {@code STREAMS_<NAME>} environment variable as in {@link OrdersApp} (how the sandbox's tests
 * shorten session timeouts). It adopts smoothscale by those settings alone: nothing here names the bridge,
 * whose jar is on the classpath.
 */
public final class PlainOrdersApp {
    private static final Logger LOG = LoggerFactory.getLogger(PlainOrdersApp.class);
    static final String ORDERS_TOPIC = "orders.topic";
    static final String TOTALS_TOPIC = "totals.topic";

    private PlainOrdersApp() {}

    static Properties load(String[] args) {
        return load(args, "/plain-app.properties");
    }

    /** The settings of the packaged {@code resource} (or of the file the first argument names), with the
     * {@code STREAMS_<NAME>} overrides. */
    static Properties load(String[] args, String resource) {
        Properties props = new Properties();
        try (InputStream in = args.length > 0 ? Files.newInputStream(Path.of(args[0]))
            : PlainOrdersApp.class.getResourceAsStream(resource)) {
            props.load(in);
        } catch (IOException error) {
            throw new UncheckedIOException("cannot read the app's settings", error);
        }
        props.putAll(OrdersApp.environmentSettings(System.getenv()));
        return props;
    }

    /** A setting as Kafka resolves it (its config providers applied); refused while a variable is unset. */
    static String resolved(Properties props, String name) {
        Map<String, Object> resolved = new StreamsConfig(props).originals();
        Object value = resolved.get(name);
        if (value == null || value.toString().contains("${")) {
            throw new IllegalArgumentException(name + " is '" + props.getProperty(name) + "': set the environment"
                + " variable it names");
        }
        return value.toString();
    }

    public static void main(String[] args) throws InterruptedException {
        Properties props = load(args);
        Topology topology = OrdersTopology.topology(resolved(props, ORDERS_TOPIC), resolved(props, TOTALS_TOPIC));
        KafkaStreams streams = new KafkaStreams(topology, props);
        CountDownLatch stopped = new CountDownLatch(1);
        streams.setStateListener((now, before) -> {
            if (now == KafkaStreams.State.NOT_RUNNING || now == KafkaStreams.State.ERROR) {
                stopped.countDown();
            }
        });
        Runtime.getRuntime().addShutdownHook(new Thread(() -> streams.close(Duration.ofSeconds(20)), "plain-app-shutdown"));
        streams.start();
        LOG.info("Plain orders app started");
        stopped.await();
        System.exit(streams.state() == KafkaStreams.State.ERROR ? 1 : 0);
    }
}
