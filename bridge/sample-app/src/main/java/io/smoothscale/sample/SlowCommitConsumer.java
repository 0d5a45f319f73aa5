package io.smoothscale.sample;

import java.time.Duration;
import java.util.Collection;
import java.util.List;
import java.util.Map;
import java.util.concurrent.atomic.AtomicInteger;
import org.apache.kafka.clients.consumer.CommitFailedException;
import org.apache.kafka.clients.consumer.ConsumerRebalanceListener;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecords;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A plain consumer whose processing of one batch outlasts its {@code max.poll.interval.ms}, then commits: the
 * Java client's own account of it (the poll timeout expiring, the member leaving the group, the commit refused
 * with a {@code CommitFailedException}, the member rejoining) in Kafka's log layout, for the log analysis's
 * tests. Nothing of it is Kafka Streams: it is the classic {@code KafkaConsumer} loop of many applications.
 *
 * <p>Arguments: bootstrap servers, topic, group id, client id, {@code max.poll.interval.ms}, how long the batch
 * takes (ms). It reads from the topic's beginning until it gets a batch, takes that long over it, commits
 * (logging the failure as an application does), polls until it is in the group again, and exits.
 */
public final class SlowCommitConsumer {
    private static final Logger LOG = LoggerFactory.getLogger(SlowCommitConsumer.class);
    private static final Duration POLL = Duration.ofMillis(200);
    private static final long WAIT_MS = 60_000;

    private SlowCommitConsumer() {}

    public static void main(String[] args) throws InterruptedException {
        if (args.length != 6) {
            throw new IllegalArgumentException("usage: SlowCommitConsumer <bootstrap> <topic> <group> <client id>"
                + " <max.poll.interval.ms> <processing ms>");
        }
        long processingMs = Long.parseLong(args[5]);
        Map<String, Object> config = Map.of(
            ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, args[0],
            ConsumerConfig.GROUP_ID_CONFIG, args[2],
            ConsumerConfig.CLIENT_ID_CONFIG, args[3],
            ConsumerConfig.MAX_POLL_INTERVAL_MS_CONFIG, Integer.parseInt(args[4]),
            ConsumerConfig.HEARTBEAT_INTERVAL_MS_CONFIG, 500,
            ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, false,
            ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest",
            ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class,
            ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class);
        try (KafkaConsumer<String, String> consumer = new KafkaConsumer<>(config)) {
            AtomicInteger assignments = new AtomicInteger();
            consumer.subscribe(List.of(args[1]), new ConsumerRebalanceListener() {
                @Override
                public void onPartitionsRevoked(Collection<TopicPartition> partitions) {}

                @Override
                public void onPartitionsAssigned(Collection<TopicPartition> partitions) {
                    assignments.incrementAndGet();
                }
            });
            ConsumerRecords<String, String> batch = ConsumerRecords.empty();
            long deadline = System.currentTimeMillis() + WAIT_MS;
            while (batch.isEmpty() && System.currentTimeMillis() < deadline) {
                batch = consumer.poll(POLL);
            }
            if (batch.isEmpty()) {
                throw new IllegalStateException("no record of " + args[1] + " within " + WAIT_MS + " ms");
            }
            LOG.info("Processing a batch of {} records, for {} ms", batch.count(), processingMs);
            Thread.sleep(processingMs);
            try {
                consumer.commitSync();
                LOG.info("Committed the batch");
            } catch (CommitFailedException error) {
                LOG.error("Could not commit the batch; its records will be processed again", error);
            }
            int before = assignments.get();
            deadline = System.currentTimeMillis() + WAIT_MS;
            while (assignments.get() == before && System.currentTimeMillis() < deadline) {
                consumer.poll(POLL);
            }
            LOG.info("Assigned {} again", consumer.assignment());
        }
    }
}
