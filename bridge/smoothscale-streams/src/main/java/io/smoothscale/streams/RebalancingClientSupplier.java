package io.smoothscale.streams;

import java.util.Map;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.consumer.Consumer;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.Producer;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.apache.kafka.common.serialization.ByteArraySerializer;
import org.apache.kafka.streams.KafkaClientSupplier;

/**
 * The clients Kafka Streams would make itself, except that the main consumers are
 * {@link RebalancingConsumer}s: pass it to {@code new KafkaStreams(topology, props, supplier)}.
 */
public final class RebalancingClientSupplier implements KafkaClientSupplier {
    private final RebalanceTrigger trigger;

    public RebalancingClientSupplier(RebalanceTrigger trigger) {
        this.trigger = trigger;
    }

    @Override
    public Admin getAdmin(Map<String, Object> config) {
        return Admin.create(config);
    }

    @Override
    public Producer<byte[], byte[]> getProducer(Map<String, Object> config) {
        return new KafkaProducer<>(config, new ByteArraySerializer(), new ByteArraySerializer());
    }

    @Override
    public Consumer<byte[], byte[]> getConsumer(Map<String, Object> config) {
        return new RebalancingConsumer(config, trigger);
    }

    @Override
    public Consumer<byte[], byte[]> getRestoreConsumer(Map<String, Object> config) {
        return plainConsumer(config);
    }

    @Override
    public Consumer<byte[], byte[]> getGlobalConsumer(Map<String, Object> config) {
        return plainConsumer(config);
    }

    private static Consumer<byte[], byte[]> plainConsumer(Map<String, Object> config) {
        return new KafkaConsumer<>(config, new ByteArrayDeserializer(), new ByteArrayDeserializer());
    }
}
