package io.smoothscale.streams;

import java.time.Duration;
import java.util.HashMap;
import java.util.HashSet;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.TreeMap;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.ListOffsetsResult;
import org.apache.kafka.clients.admin.OffsetSpec;
import org.apache.kafka.common.MetricName;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.streams.StreamsConfig;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * What the pod runs, read from the metrics Kafka Streams reports to {@link SmoothscaleMetricsReporter}
 * ({@link ReportedTasks}), for an app that adopts smoothscale by configuration alone. The changelogs' end
 * offsets, which no metric gives, come from the bridge's own admin client (the app's Streams settings, its
 * {@code admin.}-prefixed ones included), asked at most every half second for the changelog partitions of the
 * tasks the pod holds; a topic that cannot be read (deleted, not authorized) leaves the others read and its own
 * ends unknown, with a WARN naming it.
 */
final class ReportedTaskSource implements TaskSource {
    private static final Logger LOG = LoggerFactory.getLogger(ReportedTaskSource.class);
    private static final long SNAPSHOT_NANOS = 500_000_000L;
    private static final Duration END_OFFSETS_TIMEOUT = Duration.ofSeconds(5);

    private final ReportedClient client;
    private final String applicationId;
    private final Map<String, Object> adminConfigs;
    private Admin admin;
    private String topologySeen;
    private Map<String, Integer> subtopologyOfStore = Map.of();
    private final Map<TopicPartition, Long> endOffsets = new HashMap<>();
    private Map<String, TaskStates.TaskState> snapshot = Map.of();
    /** The changelog topics whose end offsets could not be read last time (logged when they change). */
    private Set<String> unreadable = Set.of();
    private long snapshotAtNanos;

    ReportedTaskSource(ReportedClient client, Map<String, ?> streamsConfigs) {
        this.client = client;
        QuietStreamsConfig config = new QuietStreamsConfig(streamsConfigs);
        this.applicationId = config.getString(StreamsConfig.APPLICATION_ID_CONFIG);
        this.adminConfigs = new HashMap<>(config.getAdminConfigs(client.clientId() + "-smoothscale-admin"));
        this.adminConfigs.remove(StreamsConfig.METRIC_REPORTER_CLASSES_CONFIG);
    }

    @Override
    public Optional<RunningTasks> running() {
        return ReportedTasks.running(client.values(ReportedTasks::runningInput), client.lastRoles());
    }

    @Override
    public synchronized Map<String, TaskStates.TaskState> states() {
        long now = System.nanoTime();
        if (now - snapshotAtNanos > SNAPSHOT_NANOS) {
            Map<MetricName, Object> values = client.values();
            Map<String, Integer> stores = subtopologies(values);
            refreshEndOffsets(values, stores);
            snapshot = ReportedTasks.taskStates(values, client.lastRoles(), applicationId, stores, endOffsets);
            snapshotAtNanos = now;
        }
        return snapshot;
    }

    @Override
    public Map<String, Double> processRates() {
        return ContractMetrics.processRates(client::metrics);
    }

    @Override
    public synchronized Set<Integer> statefulSubtopologies() {
        return Set.copyOf(subtopologies(client.values()).values());
    }

    private synchronized Map<String, Integer> subtopologies(Map<MetricName, Object> values) {
        Optional<String> description = ReportedTasks.topologyDescription(values);
        if (description.isPresent() && !description.get().equals(topologySeen)) {
            topologySeen = description.get();
            subtopologyOfStore = StoreSubtopologies.parse(topologySeen);
        }
        return subtopologyOfStore;
    }

    private void refreshEndOffsets(Map<MetricName, Object> values, Map<String, Integer> stores) {
        Set<TopicPartition> wanted = new HashSet<>();
        ReportedTasks.roles(values, client.lastRoles()).keySet()
            .forEach(task -> wanted.addAll(ReportedTasks.changelogPartitions(task, applicationId, stores)));
        endOffsets.keySet().retainAll(wanted);
        if (wanted.isEmpty()) {
            return;
        }
        Map<TopicPartition, OffsetSpec> request = new HashMap<>();
        wanted.forEach(partition -> request.put(partition, OffsetSpec.latest()));
        Map<String, String> failed = new TreeMap<>();
        try {
            if (admin == null) {
                admin = Admin.create(adminConfigs);
            }
            ListOffsetsResult result = admin.listOffsets(request);
            long deadline = System.nanoTime() + END_OFFSETS_TIMEOUT.toNanos();
            for (TopicPartition partition : wanted) {
                try {
                    long left = Math.max(0, deadline - System.nanoTime());
                    endOffsets.put(partition, result.partitionResult(partition).get(left, TimeUnit.NANOSECONDS).offset());
                } catch (ExecutionException error) {
                    // this topic's own failure (deleted, not authorized, no leader): the others are still read,
                    // and its partitions' ends are unknown rather than the last ones read
                    endOffsets.remove(partition);
                    failed.putIfAbsent(partition.topic(), String.valueOf(error.getCause()));
                }
            }
        } catch (TimeoutException | RuntimeException error) {
            LOG.warn("Cannot read the changelogs' end offsets (the last ones read stay): {}", error.toString());
        } catch (InterruptedException error) {
            Thread.currentThread().interrupt();
        }
        if (!failed.keySet().equals(unreadable)) {
            unreadable = Set.copyOf(failed.keySet());
            if (!failed.isEmpty()) {
                LOG.warn("Cannot read the end offsets of changelog topics {}: the lags of this pod's standbys of their "
                    + "tasks are unknown and not reported until they can be read (a deleted changelog is created again "
                    + "at a rebalance; a refused one needs Describe for the app's principal)", failed);
            }
        }
    }

    @Override
    public synchronized void close() {
        if (admin != null) {
            admin.close(Duration.ofSeconds(5));
        }
    }
}
