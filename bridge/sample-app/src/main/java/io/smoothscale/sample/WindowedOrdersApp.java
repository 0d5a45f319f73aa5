package io.smoothscale.sample;

import java.time.Duration;
import java.util.Properties;
import java.util.concurrent.CountDownLatch;
import org.apache.kafka.common.serialization.Serdes;
import org.apache.kafka.common.utils.Bytes;
import org.apache.kafka.streams.KafkaStreams;
import org.apache.kafka.streams.StreamsBuilder;
import org.apache.kafka.streams.Topology;
import org.apache.kafka.streams.kstream.Consumed;
import org.apache.kafka.streams.kstream.Grouped;
import org.apache.kafka.streams.kstream.KGroupedStream;
import org.apache.kafka.streams.kstream.Materialized;
import org.apache.kafka.streams.kstream.Produced;
import org.apache.kafka.streams.kstream.Repartitioned;
import org.apache.kafka.streams.kstream.TimeWindows;
import org.apache.kafka.streams.state.KeyValueStore;
import org.apache.kafka.streams.state.WindowStore;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The production-shaped sample: a Kafka Streams app shaped the way teams run them, not tuned by the project.
 * Its settings ({@code windowed-app.properties}) are Kafka's defaults but for what such apps usually set —
 * static membership ({@code group.instance.id} = the pod's name), exactly-once v2, two stream threads, one
 * standby — and what smoothscale's README asks or recommends (its adoption by settings alone, the three
 * recommended settings). Kafka's 45 s session timeout stays: a pod that leaves must leave the group by itself.
 *
 * <p>The topology: orders keyed by order id ({@code "<customer>:<amount>"}) are re-keyed by customer in a
 * stateless subtopology 0 and go through the repartition topic {@code by-customer} to subtopology 1, which keeps
 * two stores: each customer's orders per 10 s window (a windowed store, {@code orders-per-window}, written to
 * the windows topic as {@code "<customer>@<window start>" -> count}) and each customer's total (a key-value
 * store, {@code customer-totals}, written to the totals topic as {@code "<orders>,<amount>"}). Exactly-once, every
 * order is counted once in both: the totals as the other samples' are, and the windows' counts of a customer
 * add up to its orders (the windows' grace is an hour, so no late order is dropped).
 */
public final class WindowedOrdersApp {
    private static final Logger LOG = LoggerFactory.getLogger(WindowedOrdersApp.class);
    public static final String WINDOW_STORE = "orders-per-window";
    public static final String TOTALS_STORE = "customer-totals";
    static final Duration WINDOW = Duration.ofSeconds(10);
    static final Duration GRACE = Duration.ofHours(1);

    private WindowedOrdersApp() {}

    static Topology topology(String ordersTopic, String totalsTopic, String windowsTopic) {
        StreamsBuilder builder = new StreamsBuilder();
        KGroupedStream<String, String> byCustomer = builder.stream(ordersTopic, Consumed.with(Serdes.String(), Serdes.String()))
            .selectKey((order, value) -> value.substring(0, value.indexOf(':')))
            .repartition(Repartitioned.with(Serdes.String(), Serdes.String()).withName(OrdersTopology.REPARTITION))
            .groupByKey(Grouped.with(Serdes.String(), Serdes.String()));
        byCustomer.windowedBy(TimeWindows.ofSizeAndGrace(WINDOW, GRACE))
            .count(Materialized.<String, Long, WindowStore<Bytes, byte[]>>as(WINDOW_STORE)
                .withKeySerde(Serdes.String()).withValueSerde(Serdes.Long()))
            .toStream((window, count) -> window.key() + "@" + window.window().start())
            .mapValues(count -> Long.toString(count))
            .to(windowsTopic, Produced.with(Serdes.String(), Serdes.String()));
        byCustomer.aggregate(() -> "0,0", (customer, order, total) -> OrdersTopology.add(total, order),
                Materialized.<String, String, KeyValueStore<Bytes, byte[]>>as(TOTALS_STORE)
                    .withKeySerde(Serdes.String()).withValueSerde(Serdes.String()))
            .toStream()
            .to(totalsTopic, Produced.with(Serdes.String(), Serdes.String()));
        return builder.build();
    }

    public static void main(String[] args) throws InterruptedException {
        Properties props = PlainOrdersApp.load(args, "/windowed-app.properties");
        Topology topology = topology(PlainOrdersApp.resolved(props, PlainOrdersApp.ORDERS_TOPIC),
            PlainOrdersApp.resolved(props, PlainOrdersApp.TOTALS_TOPIC), PlainOrdersApp.resolved(props, "windows.topic"));
        KafkaStreams streams = new KafkaStreams(topology, props);
        CountDownLatch stopped = new CountDownLatch(1);
        streams.setStateListener((now, before) -> {
            if (now == KafkaStreams.State.NOT_RUNNING || now == KafkaStreams.State.ERROR) {
                stopped.countDown();
            }
        });
        // Kafka Streams' own close, as such apps call it: no leaveGroup (a static member stays in the group).
        Runtime.getRuntime().addShutdownHook(new Thread(() -> streams.close(Duration.ofSeconds(30)), "windowed-app-shutdown"));
        streams.start();
        LOG.info("Windowed orders app started");
        stopped.await();
        System.exit(streams.state() == KafkaStreams.State.ERROR ? 1 : 0);
    }
}
