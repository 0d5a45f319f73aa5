package io.smoothscale.sample;

import java.util.function.Consumer;
import org.apache.kafka.common.serialization.Serdes;
import org.apache.kafka.common.utils.Bytes;
import org.apache.kafka.streams.StreamsBuilder;
import org.apache.kafka.streams.Topology;
import org.apache.kafka.streams.kstream.Consumed;
import org.apache.kafka.streams.kstream.Grouped;
import org.apache.kafka.streams.kstream.KStream;
import org.apache.kafka.streams.kstream.Materialized;
import org.apache.kafka.streams.kstream.Produced;
import org.apache.kafka.streams.kstream.Repartitioned;
import org.apache.kafka.streams.processor.api.FixedKeyProcessor;
import org.apache.kafka.streams.processor.api.FixedKeyProcessorContext;
import org.apache.kafka.streams.processor.api.FixedKeyRecord;
import org.apache.kafka.streams.state.KeyValueStore;
import org.apache.kafka.streams.state.StoreBuilder;
import org.apache.kafka.streams.state.Stores;

/**
 * The samples' topology: orders keyed by order id ({@code "<customer>:<amount>"}) are counted per order in
 * subtopology 0 (RocksDB store {@code order-versions}), re-keyed by customer through the repartition topic
 * {@code by-customer}, and totalled per customer in subtopology 1 (RocksDB store {@code customer-totals}, value
 * {@code "<orders>,<amount>"}), written to the totals topic. Both stores have changelogs; run exactly-once (v2),
 * each input record is counted once in the output. The plain sample builds it on a {@code StreamsBuilder} of
 * its own, the Spring Boot sample on the one Spring Kafka gives it.
 */
public final class OrdersTopology {
    public static final String ORDER_STORE = "order-versions";
    public static final String TOTALS_STORE = "customer-totals";
    public static final String REPARTITION = "by-customer";

    private OrdersTopology() {}

    public static Topology topology(String ordersTopic, String totalsTopic) {
        StreamsBuilder builder = new StreamsBuilder();
        build(builder, ordersTopic, totalsTopic, order -> { });
        return builder.build();
    }

    /**
     * Adds the topology to {@code builder}; {@code beforeProcessing} sees each order's key first (tests' faults).
     * Returns the stream of totals it writes to {@code totalsTopic}.
     */
    public static KStream<String, String> build(StreamsBuilder builder, String ordersTopic, String totalsTopic,
                                                Consumer<String> beforeProcessing) {
        return build(builder, ordersTopic, totalsTopic, beforeProcessing, true);
    }

    /** As {@link #build(StreamsBuilder, String, String, Consumer)}; {@code orderStoreLogged=false} keeps
     * {@code order-versions} without a changelog (Kafka then gives subtopology 0's tasks no standby). */
    public static KStream<String, String> build(StreamsBuilder builder, String ordersTopic, String totalsTopic,
                                                Consumer<String> beforeProcessing, boolean orderStoreLogged) {
        return build(builder, ordersTopic, totalsTopic, beforeProcessing, orderStoreLogged, 0);
    }

    /**
     * As {@link #build(StreamsBuilder, String, String, Consumer, boolean)}; {@code repartitionPartitions > 0}
     * fixes the repartition topic's partitions (0: as many as the orders topic has). Fixed, and with
     * {@code order-versions} unlogged, the orders topic can gain partitions while the app runs: subtopology 0
     * gains tasks, while each customer's total stays in its task (Kafka Streams refuses to run when an internal
     * topic it sized from the input no longer matches it).
     */
    public static KStream<String, String> build(StreamsBuilder builder, String ordersTopic, String totalsTopic,
                                                Consumer<String> beforeProcessing, boolean orderStoreLogged,
                                                int repartitionPartitions) {
        Repartitioned<String, String> repartitioned =
            Repartitioned.with(Serdes.String(), Serdes.String()).withName(REPARTITION);
        StoreBuilder<KeyValueStore<String, Long>> orders = Stores.keyValueStoreBuilder(
            Stores.persistentKeyValueStore(ORDER_STORE), Serdes.String(), Serdes.Long());
        builder.addStateStore(orderStoreLogged ? orders : orders.withLoggingDisabled());
        KStream<String, String> totals = builder.stream(ordersTopic, Consumed.with(Serdes.String(), Serdes.String()))
            .processValues(() -> new OrderVersions(beforeProcessing), ORDER_STORE)
            .selectKey((order, value) -> value.substring(0, value.indexOf(':')))
            .repartition(repartitionPartitions > 0
                ? repartitioned.withNumberOfPartitions(repartitionPartitions) : repartitioned)
            .groupByKey(Grouped.with(Serdes.String(), Serdes.String()))
            .aggregate(() -> "0,0", (customer, order, total) -> add(total, order),
                Materialized.<String, String, KeyValueStore<Bytes, byte[]>>as(TOTALS_STORE)
                    .withKeySerde(Serdes.String()).withValueSerde(Serdes.String()))
            .toStream();
        totals.to(totalsTopic, Produced.with(Serdes.String(), Serdes.String()));
        return totals;
    }

    /** {@code "<orders>,<amount>"} plus one order {@code "<customer>:<amount>[#version]"}. */
    public static String add(String total, String order) {
        String[] parts = total.split(",");
        String amount = order.substring(order.indexOf(':') + 1).split("#")[0];
        return (Long.parseLong(parts[0]) + 1) + "," + (Long.parseLong(parts[1]) + Long.parseLong(amount));
    }

    /** Counts the versions of each order seen (state in subtopology 0), tagging the value with it. */
    private static final class OrderVersions implements FixedKeyProcessor<String, String, String> {
        private final Consumer<String> beforeProcessing;
        private FixedKeyProcessorContext<String, String> context;
        private KeyValueStore<String, Long> versions;

        OrderVersions(Consumer<String> beforeProcessing) {
            this.beforeProcessing = beforeProcessing;
        }

        @Override
        public void init(FixedKeyProcessorContext<String, String> context) {
            this.context = context;
            this.versions = context.getStateStore(ORDER_STORE);
        }

        @Override
        public void process(FixedKeyRecord<String, String> record) {
            beforeProcessing.accept(record.key());
            Long seen = versions.get(record.key());
            long version = seen == null ? 1 : seen + 1;
            versions.put(record.key(), version);
            context.forward(record.withValue(record.value() + "#" + version));
        }
    }
}
