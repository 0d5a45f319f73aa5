package io.smoothscale.broker;

import io.smoothscale.streams.CorruptPublicationException;
import io.smoothscale.streams.PublicationCodec;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.ConcurrentHashMap;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.common.PartitionInfo;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.errors.WakeupException;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Keeps the latest plan of every app in memory, read from the compacted plan topic (key: the app's
 * {@code smoothscale.app} tag, its application id; value: the publication's gzip'd JSON, Contract 3, or a
 * tombstone when the operator stops managing the app). One daemon thread per broker reads every partition
 * from the beginning without a consumer group; {@link #lookup} answers from memory and never blocks.
 *
 * <p>Until the reader has reached the end offsets the topic had when it started, it answers "no plan": an
 * older plan of an app may still be followed by a newer one in the part not read yet.
 */
public final class PlanTopicReader implements PlanSource, AutoCloseable {
    private static final Logger LOG = LoggerFactory.getLogger(PlanTopicReader.class);
    private static final Duration POLL = Duration.ofMillis(200);
    private static final Duration RETRY = Duration.ofSeconds(2);

    private final PluginSettings settings;
    private final Map<String, PlanLookup> plans = new ConcurrentHashMap<>();
    private volatile String problem = "the plan topic has not been read yet";
    private volatile boolean caughtUp;
    private volatile boolean closed;
    private volatile KafkaConsumer<byte[], byte[]> consumer;
    private final Thread thread;

    public PlanTopicReader(PluginSettings settings) {
        this.settings = settings;
        this.thread = new Thread(this::run, "smoothscale-plan-reader");
        thread.setDaemon(true);
    }

    /** Starts reading in the background. */
    public PlanTopicReader start() {
        thread.start();
        return this;
    }

    @Override
    public PlanLookup lookup(String app) {
        if (!caughtUp) {
            return PlanLookup.none(FallbackReason.NO_PLAN, problem);
        }
        PlanLookup lookup = plans.get(app);
        return lookup != null ? lookup : PlanLookup.none(FallbackReason.NO_PLAN,
            "topic " + settings.topic() + " has no plan for app " + app);
    }

    private void run() {
        while (!closed) {
            try (KafkaConsumer<byte[], byte[]> opened = new KafkaConsumer<>(consumerConfig())) {
                consumer = opened;
                readForever(opened);
            } catch (WakeupException closing) {
                return;
            } catch (RuntimeException error) {
                problem = "reading topic " + settings.topic() + " failed: " + error;
                LOG.warn("smoothscale plan reader: {}; retrying in {} ms", problem, RETRY.toMillis());
                sleep(RETRY);
            }
        }
    }

    private void readForever(KafkaConsumer<byte[], byte[]> opened) {
        List<TopicPartition> partitions = List.of();
        while (partitions.isEmpty() && !closed) {
            List<PartitionInfo> infos = opened.partitionsFor(settings.topic(), Duration.ofSeconds(5));
            partitions = infos == null ? List.of()
                : infos.stream().map(info -> new TopicPartition(info.topic(), info.partition())).toList();
            if (partitions.isEmpty()) {
                problem = "topic " + settings.topic() + " does not exist yet (the operator creates it)";
                sleep(RETRY);
            }
        }
        opened.assign(partitions);
        opened.seekToBeginning(partitions);
        Map<TopicPartition, Long> ends = new HashMap<>(opened.endOffsets(partitions));
        while (!closed) {
            for (ConsumerRecord<byte[], byte[]> record : opened.poll(POLL)) {
                apply(record);
            }
            if (!caughtUp) {
                ends.entrySet().removeIf(end -> opened.position(end.getKey()) >= end.getValue());
                if (ends.isEmpty()) {
                    caughtUp = true;
                    LOG.info("smoothscale plan reader: read topic {} to its end, plans for apps {}",
                        settings.topic(), plans.keySet());
                }
            }
        }
    }

    private void apply(ConsumerRecord<byte[], byte[]> record) {
        if (record.key() == null) {
            LOG.warn("smoothscale plan reader: ignoring a record without a key at {}-{}@{}",
                record.topic(), record.partition(), record.offset());
            return;
        }
        String app = new String(record.key(), StandardCharsets.UTF_8);
        if (record.value() == null) {
            plans.remove(app);
            LOG.info("smoothscale plan reader: app {} has no plan any more", app);
            return;
        }
        try {
            var plan = PublicationCodec.decode(record.value());
            plans.put(app, PlanLookup.found(plan));
            LOG.info("smoothscale plan reader: app {} plan generation {}", app, plan.generation());
        } catch (CorruptPublicationException error) {
            String detail = "the record at " + record.topic() + "-" + record.partition() + "@" + record.offset()
                + " is not a plan: " + error.getMessage();
            plans.put(app, PlanLookup.none(FallbackReason.CORRUPT_PLAN, detail));
            LOG.warn("smoothscale plan reader: app {}: {}", app, detail);
        }
    }

    private Properties consumerConfig() {
        Properties config = new Properties();
        config.putAll(settings.clientConfig());
        config.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, settings.bootstrapServers());
        config.put(ConsumerConfig.CLIENT_ID_CONFIG, "smoothscale-plan-reader");
        config.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, "false");
        config.put(ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, ByteArrayDeserializer.class.getName());
        config.put(ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, ByteArrayDeserializer.class.getName());
        return config;
    }

    private void sleep(Duration duration) {
        try {
            Thread.sleep(duration.toMillis());
        } catch (InterruptedException interrupted) {
            Thread.currentThread().interrupt();
            closed = true;
        }
    }

    @Override
    public void close() {
        closed = true;
        KafkaConsumer<byte[], byte[]> current = consumer;
        if (current != null) {
            current.wakeup();
        }
        thread.interrupt();
    }
}
