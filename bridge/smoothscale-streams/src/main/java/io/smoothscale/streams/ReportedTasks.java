package io.smoothscale.streams;

import java.util.HashMap;
import java.util.HashSet;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.TreeMap;
import org.apache.kafka.common.MetricName;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.streams.processor.TaskId;
import org.apache.kafka.streams.errors.TaskIdFormatException;

/**
 * The tasks a Kafka Streams client runs and how far behind their state is, read from the metrics Kafka Streams
 * registers at its default recording level (INFO), for apps that hand the bridge no {@code KafkaStreams} object.
 * Checked against the sources of Kafka Streams 3.8 and 4.4 (and the real-broker tests):
 *
 * <ul>
 *   <li>{@code state} ({@code stream-metrics}): the client's state; tasks are reported only while RUNNING, as
 *       {@code KafkaStreams.metadataForLocalThreads()} is read only then.</li>
 *   <li>an active task registers {@code active-process-ratio} and {@code restore-remaining-records-total}
 *       ({@code stream-task-metrics}, tags {@code thread-id}, {@code task-id}) when it is created, a standby
 *       {@code update-total}; both are removed when the task is closed or recycled. (Kafka registers a metric
 *       whatever its recording level; the level decides only whether it is updated.)</li>
 *   <li>a standby's lag: the restore consumer's {@code records-lag} ({@code consumer-fetch-manager-metrics},
 *       tags {@code topic}, {@code partition}) of each of the task's changelog partitions
 *       {@code <application.id>-<store>-changelog}, {@code p}; until its first fetch, the changelog's end
 *       offset (nothing restored assumed). There is no per-task remaining-records metric for standbys.</li>
 *   <li>an active task's lag: 0 once the client is RUNNING (Kafka Streams leaves REBALANCING only when every
 *       active task has restored); before, {@code restore-remaining-records-total}, which Kafka sets to the
 *       records to restore and lowers as they are restored.</li>
 * </ul>
 */
final class ReportedTasks {
    static final String CLIENT_GROUP = "stream-metrics";
    static final String TASK_GROUP = "stream-task-metrics";
    static final String FETCH_GROUP = "consumer-fetch-manager-metrics";
    static final String UPDATER_GROUP = "stream-state-updater-metrics";
    static final String STANDBYS_UPDATING = "standby-updating-tasks";
    static final String STANDBYS_PAUSED = "standby-paused-tasks";
    static final String STATE = "state";
    static final String TOPOLOGY = "topology-description";
    static final String ACTIVE_MARKER = "active-process-ratio";
    static final String STANDBY_MARKER = "update-total";
    static final String RESTORE_REMAINING = "restore-remaining-records-total";
    static final String RECORDS_LAG = "records-lag";
    static final String RUNNING = "RUNNING";

    private ReportedTasks() {}

    /** The metrics a reporter keeps: these groups of the Streams registry, the consumers' per-partition lag. */
    static boolean wanted(MetricName name) {
        return name.group().equals(CLIENT_GROUP) || name.group().equals(TASK_GROUP) || name.group().equals(UPDATER_GROUP)
            || name.group().equals(FETCH_GROUP) && name.name().equals(RECORDS_LAG) && name.tags().containsKey("partition");
    }

    static Optional<String> clientState(Map<MetricName, Object> values) {
        return clientLevel(values, STATE);
    }

    static Optional<String> topologyDescription(Map<MetricName, Object> values) {
        return clientLevel(values, TOPOLOGY);
    }

    private static Optional<String> clientLevel(Map<MetricName, Object> values, String metric) {
        for (Map.Entry<MetricName, Object> entry : values.entrySet()) {
            if (entry.getKey().group().equals(CLIENT_GROUP) && entry.getKey().name().equals(metric) && entry.getValue() != null) {
                return Optional.of(entry.getValue().toString());
            }
        }
        return Optional.empty();
    }

    /**
     * The metrics {@link #running} reads: the client's state and topology, the tasks' markers, the restore
     * consumers' partition lags.
     */
    static boolean runningInput(MetricName name) {
        return name.group().equals(CLIENT_GROUP) && (name.name().equals(STATE) || name.name().equals(TOPOLOGY))
            || name.group().equals(TASK_GROUP) && (name.name().equals(ACTIVE_MARKER) || name.name().equals(STANDBY_MARKER))
            || name.group().equals(UPDATER_GROUP) && (name.name().equals(STANDBYS_UPDATING) || name.name().equals(STANDBYS_PAUSED))
            || restoreLag(name);
    }

    private static boolean restoreLag(MetricName name) {
        return name.group().equals(FETCH_GROUP) && name.name().equals(RECORDS_LAG) && name.tags().containsKey("partition")
            && name.tags().getOrDefault("client-id", "").endsWith("-restore-consumer");
    }

    /**
     * The tasks the client runs (empty unless it is RUNNING): {@link #running(Map)}, plus the standbys whose
     * markers Kafka dropped. A standby whose state Kafka Streams finds corrupted (under exactly-once, after the
     * process was killed) is closed dirty, which removes its task-level metrics, and revived: it runs again
     * without them (Kafka registers them once, when the task object is created). Its changelog partitions still
     * show in the restore consumer's lags, which name it through {@code subtopologyOfStore}. Those lags are read
     * only while the state updater (3.8 and later) counts more standbys than have markers: a restore consumer
     * left with nothing to fetch is not polled again, so the lags of standbys it no longer holds stay behind.
     */
    static Optional<RunningTasks> running(Map<MetricName, Object> values, String applicationId,
                                          Map<String, Integer> subtopologyOfStore) {
        return running(values).map(tasks -> {
            long held = 0;
            for (Map.Entry<MetricName, Object> entry : values.entrySet()) {
                MetricName name = entry.getKey();
                if (name.group().equals(UPDATER_GROUP) && (name.name().equals(STANDBYS_UPDATING)
                    || name.name().equals(STANDBYS_PAUSED)) && entry.getValue() instanceof Number count) {
                    held += count.longValue();
                }
            }
            if (held <= tasks.standby().size()) {
                return tasks;
            }
            Set<String> standby = new HashSet<>(tasks.standby());
            values.keySet().forEach(name -> {
                if (restoreLag(name)) {
                    changelogTask(name.tags().get("topic"), name.tags().get("partition"), applicationId, subtopologyOfStore)
                        .ifPresent(standby::add);
                }
            });
            standby.removeAll(tasks.active());
            return new RunningTasks(tasks.active(), standby);
        });
    }

    private static Optional<String> changelogTask(String topic, String partition, String applicationId,
                                                  Map<String, Integer> subtopologyOfStore) {
        String prefix = applicationId + "-";
        String suffix = "-changelog";
        if (topic == null || !topic.startsWith(prefix) || !topic.endsWith(suffix)
            || topic.length() <= prefix.length() + suffix.length()) {
            return Optional.empty();
        }
        Integer subtopology = subtopologyOfStore.get(topic.substring(prefix.length(), topic.length() - suffix.length()));
        return subtopology == null ? Optional.empty() : Optional.of(subtopology + "_" + partition);
    }

    /** The tasks the client runs; empty unless it is RUNNING. */
    static Optional<RunningTasks> running(Map<MetricName, Object> values) {
        if (!clientState(values).map(RUNNING::equals).orElse(false)) {
            return Optional.empty();
        }
        return Optional.of(new RunningTasks(tasksWith(values, ACTIVE_MARKER), tasksWith(values, STANDBY_MARKER)));
    }

    private static Set<String> tasksWith(Map<MetricName, Object> values, String marker) {
        Set<String> tasks = new HashSet<>();
        values.keySet().forEach(name -> {
            if (name.group().equals(TASK_GROUP) && name.name().equals(marker) && name.tags().containsKey("task-id")) {
                tasks.add(name.tags().get("task-id"));
            }
        });
        return tasks;
    }

    /**
     * Lag and changelog end of every task with state the client holds (active or standby, summed over the
     * task's stores), given the subtopology of each store and the changelogs' end offsets.
     */
    static Map<String, TaskStates.TaskState> taskStates(Map<MetricName, Object> values, String applicationId,
                                                        Map<String, Integer> subtopologyOfStore,
                                                        Map<TopicPartition, Long> endOffsets) {
        boolean running = clientState(values).map(RUNNING::equals).orElse(false);
        Map<TopicPartition, Long> fetchLags = new HashMap<>();
        Map<String, Long> remaining = new HashMap<>();
        values.forEach((name, value) -> {
            if (name.group().equals(FETCH_GROUP) && name.name().equals(RECORDS_LAG) && value instanceof Number lag
                && !Double.isNaN(lag.doubleValue())) {
                try {
                    fetchLags.merge(new TopicPartition(name.tags().get("topic"), Integer.parseInt(name.tags().get("partition"))),
                        Math.max(0, lag.longValue()), Math::max);
                } catch (NumberFormatException ignored) {
                    // not a partition's lag
                }
            } else if (name.group().equals(TASK_GROUP) && name.name().equals(RESTORE_REMAINING) && value instanceof Number left
                && !Double.isNaN(left.doubleValue())) {
                remaining.merge(name.tags().get("task-id"), Math.max(0, left.longValue()), Long::sum);
            }
        });
        Map<String, TaskStates.TaskState> states = new TreeMap<>();
        Set<String> active = tasksWith(values, ACTIVE_MARKER);
        Set<String> held = new HashSet<>(active);
        held.addAll(tasksWith(values, STANDBY_MARKER));
        for (String task : held) {
            Set<TopicPartition> changelogs = changelogPartitions(task, applicationId, subtopologyOfStore);
            if (changelogs.isEmpty()) {
                continue;  // a stateless task (or one whose stores keep no changelog)
            }
            long end = 0;
            long lag = 0;
            for (TopicPartition changelog : changelogs) {
                long partitionEnd = endOffsets.getOrDefault(changelog, 0L);
                end += partitionEnd;
                if (!active.contains(task)) {
                    lag += fetchLags.getOrDefault(changelog, partitionEnd);
                }
            }
            if (active.contains(task) && !running) {
                lag = remaining.getOrDefault(task, 0L);
            }
            states.put(task, new TaskStates.TaskState(lag, end));
        }
        return states;
    }

    /** The changelog partitions of a task's stores: {@code <application.id>-<store>-changelog}, the task's partition. */
    static Set<TopicPartition> changelogPartitions(String task, String applicationId, Map<String, Integer> subtopologyOfStore) {
        TaskId id;
        try {
            id = TaskId.parse(task);
        } catch (TaskIdFormatException error) {
            return Set.of();
        }
        Set<TopicPartition> partitions = new HashSet<>();
        subtopologyOfStore.forEach((store, subtopology) -> {
            if (subtopology == id.subtopology()) {
                partitions.add(new TopicPartition(applicationId + "-" + store + "-changelog", id.partition()));
            }
        });
        return partitions;
    }
}
