package io.smoothscale.broker;

import com.fasterxml.jackson.databind.ObjectMapper;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.TreeMap;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.errors.GroupIdNotFoundException;
import org.apache.kafka.common.serialization.ByteArraySerializer;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Publishes Kafka's own view of the streams groups this broker assigns ({@code Admin.describeStreamsGroups}:
 * members, pods, racks, task offsets and end offsets, the assignment each member runs and its target, the
 * topology) to the compacted topic {@code smoothscale-groups}, key the app's application id (its group id),
 * value {@code {"publishedMs": ..., "view": ...}} as {@link GroupView} prints it. The operator is Python and
 * its image has no JVM; no Python client has {@code describeStreamsGroups} (confluent-kafka 2.16 lacks it):
 * this is how it reads the group through Kafka without scraping the app's pods.
 *
 * <p>{@link #assigned} is all the coordinator's thread does (a map write); one daemon thread per broker
 * describes the registered groups every {@code smoothscale.groups.interval.ms} (1 s) and writes a view when
 * it changed, or at least every {@link #KEEPALIVE} so that a reader can tell a fresh view from a stale one.
 * A group no assignment on this broker has touched for {@link #FORGET} is dropped (the coordinator moved);
 * the operator wakes the new coordinator by asking for an assignment when the view it reads grows old.
 */
public final class GroupViewPublisher implements AutoCloseable {
    public static final String DEFAULT_TOPIC = "smoothscale-groups";
    static final Duration KEEPALIVE = Duration.ofSeconds(10);
    static final Duration FORGET = Duration.ofMinutes(10);
    private static final Logger LOG = LoggerFactory.getLogger(GroupViewPublisher.class);
    private static final Duration RETRY = Duration.ofSeconds(2);

    private final PluginSettings settings;
    private final Duration interval;
    private final Map<String, Long> apps = new ConcurrentHashMap<>();
    private final Map<String, String> lastViews = new HashMap<>();
    private final Map<String, Long> lastWrites = new HashMap<>();
    private final ObjectMapper json = new ObjectMapper();
    private final Thread thread;
    private volatile boolean closed;

    public GroupViewPublisher(PluginSettings settings) {
        this.settings = settings;
        this.interval = Duration.ofMillis(settings.groupsIntervalMs());
        this.thread = new Thread(this::run, "smoothscale-group-view-publisher");
        thread.setDaemon(true);
    }

    /** Starts publishing in the background. */
    public GroupViewPublisher start() {
        thread.start();
        return this;
    }

    /** The coordinator assigned the group of {@code app} on this broker: publish its view from now on. */
    public void assigned(String app) {
        apps.put(app, System.currentTimeMillis());
    }

    private void run() {
        while (!closed) {
            try (Admin admin = Admin.create(adminConfig());
                 KafkaProducer<byte[], byte[]> producer = new KafkaProducer<>(producerConfig())) {
                while (!closed) {
                    long started = System.currentTimeMillis();
                    publishOnce(admin, producer, started);
                    sleep(Math.max(0, interval.toMillis() - (System.currentTimeMillis() - started)));
                }
            } catch (RuntimeException | ExecutionException | TimeoutException error) {
                LOG.warn("smoothscale group views: {}; retrying in {} ms", error.toString(), RETRY.toMillis());
                sleep(RETRY.toMillis());
            } catch (InterruptedException interrupted) {
                Thread.currentThread().interrupt();
                return;
            }
        }
    }

    private void publishOnce(Admin admin, KafkaProducer<byte[], byte[]> producer, long now)
        throws ExecutionException, InterruptedException, TimeoutException {
        apps.entrySet().removeIf(app -> now - app.getValue() > FORGET.toMillis());
        List<String> groups = List.copyOf(apps.keySet());
        if (groups.isEmpty()) {
            return;
        }
        var futures = admin.describeStreamsGroups(groups).describedGroups();
        for (String app : groups) {
            Map<String, Object> view;
            try {
                view = GroupView.describe(futures.get(app).get(30, TimeUnit.SECONDS));
            } catch (ExecutionException error) {
                if (!(error.getCause() instanceof GroupIdNotFoundException)) {
                    throw error;
                }
                view = null;
            }
            String text = serialize(view);
            Long written = lastWrites.get(app);
            if (text.equals(lastViews.get(app)) && written != null && now - written < KEEPALIVE.toMillis()) {
                continue;
            }
            Map<String, Object> record = new TreeMap<>();
            record.put("publishedMs", now);
            record.put("view", view);
            producer.send(new ProducerRecord<>(settings.groupsTopic(), app.getBytes(StandardCharsets.UTF_8),
                serialize(record).getBytes(StandardCharsets.UTF_8)));
            lastViews.put(app, text);
            lastWrites.put(app, now);
        }
        producer.flush();
    }

    private String serialize(Object value) {
        try {
            return json.writeValueAsString(value);
        } catch (com.fasterxml.jackson.core.JsonProcessingException error) {
            throw new IllegalStateException("a group view did not serialize: " + error, error);
        }
    }

    private Properties adminConfig() {
        Properties config = new Properties();
        config.putAll(settings.clientConfig());
        config.put(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, settings.bootstrapServers());
        config.put(AdminClientConfig.CLIENT_ID_CONFIG, "smoothscale-group-views");
        return config;
    }

    private Properties producerConfig() {
        Properties config = new Properties();
        config.putAll(settings.clientConfig());
        config.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, settings.bootstrapServers());
        config.put(ProducerConfig.CLIENT_ID_CONFIG, "smoothscale-group-views");
        config.put(ProducerConfig.ACKS_CONFIG, "1");
        config.put(ProducerConfig.LINGER_MS_CONFIG, "0");
        config.put(ProducerConfig.KEY_SERIALIZER_CLASS_CONFIG, ByteArraySerializer.class.getName());
        config.put(ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG, ByteArraySerializer.class.getName());
        return config;
    }

    private void sleep(long millis) {
        try {
            Thread.sleep(millis);
        } catch (InterruptedException interrupted) {
            Thread.currentThread().interrupt();
            closed = true;
        }
    }

    @Override
    public void close() {
        closed = true;
        thread.interrupt();
    }
}
