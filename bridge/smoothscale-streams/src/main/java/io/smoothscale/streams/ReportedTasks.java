package io.smoothscale.streams;

import java.util.HashMap;
import java.util.HashSet;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.TreeMap;
import java.util.regex.Pattern;
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
 *       whatever its recording level; the level decides only whether it is updated.) Two cases break that
 *       rule, and {@link #roles} reads the roles so that neither misleads:
 *       <ul>
 *         <li>a task found corrupted (under exactly-once, a task restarted with its volume but without a
 *             checkpoint) is closed dirty, which removes its task metrics, and revived as the same object,
 *             which does not register them again: it keeps running with no marker. Its stores, initialised
 *             again, register their metrics again ({@code stream-state-metrics}, tag {@code task-id}), so a
 *             task with store metrics and no marker keeps the role of the last marker it registered;</li>
 *         <li>the standbys Kafka Streams makes at start-up for the state it finds on disk are created by the
 *             thread that constructs {@code KafkaStreams}, and closed or recycled by a stream thread, which
 *             removes task metrics under its own thread's name: their {@code update-total} stays behind. A
 *             standby marker counts only while the task has store metrics (a standby always has stores).</li>
 *       </ul></li>
 *   <li>a standby's lag: the restore consumer's {@code records-lag} ({@code consumer-fetch-manager-metrics},
 *       tags {@code topic}, {@code partition}) of each of the task's changelog partitions
 *       {@code <application.id>-<store>-changelog}, {@code p}; until its first fetch, the changelog's end
 *       offset (nothing restored assumed), and while that end could not be read either (the topic deleted, not
 *       readable) the lag is unknown and the task is not reported: an unknown lag read as 0 would pass a copy
 *       that holds nothing for caught up. There is no per-task remaining-records metric for standbys.</li>
 *   <li>an active task's lag: 0 once the client is RUNNING (Kafka Streams leaves REBALANCING only when every
 *       active task has restored); before, {@code restore-remaining-records-total}, which Kafka sets to the
 *       records to restore and lowers as they are restored.</li>
 * </ul>
 */
final class ReportedTasks {
    static final String CLIENT_GROUP = "stream-metrics";
    static final String TASK_GROUP = "stream-task-metrics";
    static final String FETCH_GROUP = "consumer-fetch-manager-metrics";
    static final String STORE_GROUP = "stream-state-metrics";
    static final String STATE = "state";
    static final String TOPOLOGY = "topology-description";
    static final String ACTIVE_MARKER = "active-process-ratio";
    static final String STANDBY_MARKER = "update-total";
    static final String RESTORE_REMAINING = "restore-remaining-records-total";
    static final String RECORDS_LAG = "records-lag";
    static final String RUNNING = "RUNNING";
    private static final Pattern STREAM_THREAD = Pattern.compile(".+-StreamThread-\\d+");

    private ReportedTasks() {}

    /** The metrics a reporter keeps: these groups of the Streams registry, the consumers' per-partition lag. */
    static boolean wanted(MetricName name) {
        return name.group().equals(CLIENT_GROUP) || name.group().equals(TASK_GROUP) || name.group().equals(STORE_GROUP)
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

    /** The metrics {@link #running} reads: the client's state, the tasks' markers and their stores' metrics. */
    static boolean runningInput(MetricName name) {
        return name.group().equals(CLIENT_GROUP) && name.name().equals(STATE) || isMarker(name)
            || name.group().equals(STORE_GROUP);
    }

    /** Whether {@code name} is a task's role marker: {@code active-process-ratio} or {@code update-total}. */
    static boolean isMarker(MetricName name) {
        return name.group().equals(TASK_GROUP) && name.tags().containsKey("task-id")
            && (name.name().equals(ACTIVE_MARKER) || name.name().equals(STANDBY_MARKER));
    }

    /**
     * The tasks the client runs; empty unless it is RUNNING. {@code lastRoles}: each task's role as the last
     * marker it registered gave it (true: active), see {@link #roles}.
     */
    static Optional<RunningTasks> running(Map<MetricName, Object> values, Map<String, Boolean> lastRoles) {
        if (!clientState(values).map(RUNNING::equals).orElse(false)) {
            return Optional.empty();
        }
        Map<String, Boolean> roles = roles(values, lastRoles);
        return Optional.of(new RunningTasks(withRole(roles, true), withRole(roles, false)));
    }

    /**
     * Each task the client holds, true when it is active: a task with an active marker is active; a task with
     * store metrics is held, in the role of the last marker it registered, else as a standby if it has a
     * standby marker (a task revived after corruption has no marker left).
     */
    static Map<String, Boolean> roles(Map<MetricName, Object> values, Map<String, Boolean> lastRoles) {
        Set<String> standby = new HashSet<>();
        Set<String> withStores = new HashSet<>();
        Map<String, Boolean> roles = new TreeMap<>();
        values.keySet().forEach(name -> {
            String task = name.tags().get("task-id");
            if (name.group().equals(STORE_GROUP) && task != null) {
                withStores.add(task);
            } else if (isMarker(name) && name.name().equals(ACTIVE_MARKER)) {
                roles.put(task, true);
            } else if (isMarker(name)) {
                standby.add(task);
            }
        });
        for (String task : withStores) {
            Boolean last = lastRoles.get(task);
            if (!roles.containsKey(task) && (last != null || standby.contains(task))) {
                roles.put(task, last != null && last);
            }
        }
        return roles;
    }

    private static Set<String> withRole(Map<String, Boolean> roles, boolean active) {
        Set<String> tasks = new HashSet<>();
        roles.forEach((task, isActive) -> {
            if (isActive == active) {
                tasks.add(task);
            }
        });
        return tasks;
    }

    /**
     * Lag and changelog end of every task with state the client holds (active or standby, summed over the
     * task's stores), given the subtopology of each store and the changelogs' end offsets.
     */
    static Map<String, TaskStates.TaskState> taskStates(Map<MetricName, Object> values, Map<String, Boolean> lastRoles,
                                                        String applicationId, Map<String, Integer> subtopologyOfStore,
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
        Map<String, Boolean> roles = roles(values, lastRoles);
        Set<String> active = withRole(roles, true);
        for (String task : roles.keySet()) {
            Set<TopicPartition> changelogs = changelogPartitions(task, applicationId, subtopologyOfStore);
            if (changelogs.isEmpty()) {
                continue;  // a stateless task (or one whose stores keep no changelog)
            }
            long end = 0;
            long lag = 0;
            boolean known = true;
            for (TopicPartition changelog : changelogs) {
                Long partitionEnd = endOffsets.get(changelog);
                end += partitionEnd == null ? 0 : partitionEnd;
                if (!active.contains(task)) {
                    Long fetched = fetchLags.get(changelog);
                    known &= fetched != null || partitionEnd != null;
                    lag += fetched != null ? fetched : partitionEnd != null ? partitionEnd : 0;
                }
            }
            if (!known) {
                continue;  // neither fetched nor its end read: its lag is unknown, never 0 (not reported)
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
