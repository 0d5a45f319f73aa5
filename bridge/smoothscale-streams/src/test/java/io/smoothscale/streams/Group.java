package io.smoothscale.streams;

import java.util.HashMap;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.SortedSet;
import java.util.TreeSet;
import java.util.UUID;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.streams.processor.TaskId;
import org.apache.kafka.streams.processor.assignment.ApplicationState;
import org.apache.kafka.streams.processor.assignment.AssignmentConfigs;
import org.apache.kafka.streams.processor.assignment.KafkaStreamsState;
import org.apache.kafka.streams.processor.assignment.ProcessId;
import org.apache.kafka.streams.processor.assignment.TaskInfo;
import org.apache.kafka.streams.processor.assignment.TaskTopicPartition;
import org.apache.kafka.streams.state.HostInfo;

/**
 * A consumer group as the leader's assignor sees it, built member by member: the {@link ApplicationState}
 * Kafka Streams hands a KIP-924 assignor, made of the API's own interfaces.
 */
final class Group implements ApplicationState {
    private final Map<TaskId, TaskInfo> tasks = new LinkedHashMap<>();
    private final Map<ProcessId, KafkaStreamsState> clients = new LinkedHashMap<>();
    private final Map<String, ProcessId> byPod = new HashMap<>();
    private final Map<ProcessId, Map<TaskId, Long>> lags = new HashMap<>();
    private int standbys = 0;
    private RuntimeException failNextStates;

    /** Subtopology {@code subtopology} with {@code partitions} tasks, stateful (with a changelog) or not. */
    Group tasks(int subtopology, int partitions, boolean stateful) {
        return tasks(subtopology, partitions, stateful, stateful);
    }

    /** Tasks whose stores may have logging disabled: stateful, but no changelog to restore a standby from. */
    Group tasks(int subtopology, int partitions, boolean stateful, boolean changelog) {
        for (int p = 0; p < partitions; p++) {
            TaskId id = new TaskId(subtopology, p);
            tasks.put(id, new Info(id, stateful, changelog));
        }
        return this;
    }

    /** The member's state of {@code task} is {@code lag} offsets behind (default: 0 for previous actives). */
    Group lag(String pod, String task, long lag) {
        lags.computeIfAbsent(byPod.get(pod), p -> new HashMap<>()).put(TaskId.parse(task), lag);
        return this;
    }

    /** The next {@link #kafkaStreamsStates} call throws (as a bug in the assignor's own code would). */
    Group failNextStates(RuntimeException error) {
        failNextStates = error;
        return this;
    }

    Group standbys(int replicas) {
        standbys = replicas;
        return this;
    }

    /** A member named after {@code pod} (its client.id), with {@code threads} stream threads. */
    Group member(String pod, int threads, Set<TaskId> previousActive) {
        SortedSet<String> consumers = new TreeSet<>();
        for (int t = 1; t <= threads; t++) {
            consumers.add(pod + "-StreamThread-" + t + "-consumer-" + UUID.randomUUID());
        }
        return member(pod, consumers, previousActive);
    }

    Group member(String pod, SortedSet<String> consumers, Set<TaskId> previousActive) {
        ProcessId id = new ProcessId(UUID.nameUUIDFromBytes((pod + clients.size()).getBytes()));
        clients.put(id, new Client(id, consumers, new TreeSet<>(previousActive), lags));
        byPod.put(pod, id);
        return this;
    }

    ProcessId process(String pod) {
        return byPod.get(pod);
    }

    @Override
    public Map<ProcessId, KafkaStreamsState> kafkaStreamsStates(boolean computeTaskLags) {
        RuntimeException error = failNextStates;
        if (error != null) {
            failNextStates = null;
            throw error;
        }
        return clients;
    }

    @Override
    public AssignmentConfigs assignmentConfigs() {
        return new AssignmentConfigs(10_000L, 2, standbys, 600_000L, List.of());
    }

    @Override
    public Map<TaskId, TaskInfo> allTasks() {
        return tasks;
    }

    private record Info(TaskId id, boolean isStateful, boolean changelog) implements TaskInfo {
        @Override
        public Set<String> stateStoreNames() {
            return isStateful ? Set.of("store-" + id.subtopology()) : Set.of();
        }

        @Override
        public Set<TaskTopicPartition> topicPartitions() {
            Set<TaskTopicPartition> partitions = new HashSet<>();
            partitions.add(new Partition(new TopicPartition("input-" + id.subtopology(), id.partition()), true, false));
            if (changelog) {
                partitions.add(new Partition(new TopicPartition("app-store-" + id.subtopology() + "-changelog",
                    id.partition()), false, true));
            }
            return partitions;
        }
    }

    private record Partition(TopicPartition topicPartition, boolean isSource, boolean isChangelog)
        implements TaskTopicPartition {
        @Override
        public Optional<Set<String>> rackIds() {
            return Optional.empty();
        }
    }

    private record Client(ProcessId processId, SortedSet<String> consumerClientIds,
                          SortedSet<TaskId> previousActiveTasks, Map<ProcessId, Map<TaskId, Long>> lags)
        implements KafkaStreamsState {
        @Override
        public int numProcessingThreads() {
            return Math.max(1, consumerClientIds.size());
        }

        @Override
        public SortedSet<TaskId> previousStandbyTasks() {
            SortedSet<TaskId> standbys = new TreeSet<>(lags.getOrDefault(processId, Map.of()).keySet());
            standbys.removeAll(previousActiveTasks);
            return standbys;
        }

        @Override
        public long lagFor(TaskId task) {
            Long lag = lags.getOrDefault(processId, Map.of()).get(task);
            if (lag != null) {
                return lag;
            }
            return previousActiveTasks.contains(task) ? 0 : 1_000_000;
        }

        @Override
        public SortedSet<TaskId> prevTasksByLag(String consumerClientId) {
            return new TreeSet<>(previousActiveTasks);
        }

        @Override
        public Map<TaskId, Long> statefulTasksToLagSums() {
            return Map.of();
        }

        @Override
        public Optional<HostInfo> hostInfo() {
            return Optional.empty();
        }

        @Override
        public Map<String, String> clientTags() {
            return Map.of();
        }

        @Override
        public Optional<String> rackId() {
            return Optional.empty();
        }
    }
}
