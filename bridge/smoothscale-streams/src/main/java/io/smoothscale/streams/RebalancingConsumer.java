package io.smoothscale.streams;

import java.time.Duration;
import java.util.Map;
import org.apache.kafka.clients.consumer.ConsumerRecords;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A stream thread's main consumer that starts the rebalance a new publication needs from its own polling
 * thread, through the public {@code enforceRebalance}: the rebalance begins on this very poll.
 */
final class RebalancingConsumer extends KafkaConsumer<byte[], byte[]> {
    private static final Logger LOG = LoggerFactory.getLogger(RebalancingConsumer.class);

    private final RebalanceTrigger trigger;

    RebalancingConsumer(Map<String, Object> config, RebalanceTrigger trigger) {
        super(config, new ByteArrayDeserializer(), new ByteArrayDeserializer());
        this.trigger = trigger;
    }

    @Override
    public ConsumerRecords<byte[], byte[]> poll(Duration timeout) {
        String reason = trigger.take();
        if (reason != null) {
            LOG.info("Requesting a rebalance: {}", reason);
            enforceRebalance(reason);
        }
        return super.poll(timeout);
    }
}
