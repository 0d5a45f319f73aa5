package io.smoothscale.streams;

import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.SortedSet;
import java.util.TreeSet;
import java.util.UUID;
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
    private int standbys = 0;

    /** Subtopology {@code subtopology} with {@code partitions} tasks, stateful or not. */
    Group tasks(int subtopology, int partitions, boolean stateful) {
        for (int p = 0; p < partitions; p++) {
            TaskId id = new TaskId(subtopology, p);
            tasks.put(id, new Info(id, stateful));
        }
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
        clients.put(id, new Client(id, consumers, new TreeSet<>(previousActive)));
        byPod.put(pod, id);
        return this;
    }

    ProcessId process(String pod) {
        return byPod.get(pod);
    }

    @Override
    public Map<ProcessId, KafkaStreamsState> kafkaStreamsStates(boolean computeTaskLags) {
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

    private record Info(TaskId id, boolean isStateful) implements TaskInfo {
        @Override
        public Set<String> stateStoreNames() {
            return isStateful ? Set.of("store-" + id.subtopology()) : Set.of();
        }

        @Override
        public Set<TaskTopicPartition> topicPartitions() {
            return Set.of();
        }
    }

    private record Client(ProcessId processId, SortedSet<String> consumerClientIds,
                          SortedSet<TaskId> previousActiveTasks) implements KafkaStreamsState {
        @Override
        public int numProcessingThreads() {
            return Math.max(1, consumerClientIds.size());
        }

        @Override
        public SortedSet<TaskId> previousStandbyTasks() {
            return new TreeSet<>();
        }

        @Override
        public long lagFor(TaskId task) {
            return previousActiveTasks.contains(task) ? 0 : 1000;
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
