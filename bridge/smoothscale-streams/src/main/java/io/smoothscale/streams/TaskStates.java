package io.smoothscale.streams;

import java.util.Map;
import java.util.TreeMap;
import org.apache.kafka.streams.LagInfo;
import org.apache.kafka.streams.TopologyDescription;

/**
 * Per-task lag and changelog end offset of every state this instance holds, summed over the task's stores.
 *
 * <p>Kafka Streams reports lags per store and partition ({@code allLocalStorePartitionLags()}); a store
 * belongs to one subtopology of the topology, and the store's partition {@code p} to task
 * {@code <subtopology>_p}, which is what the operator plans with.
 */
public final class TaskStates {
    /** One task's state on this instance: offsets behind the changelogs' ends, and those ends. */
    public record TaskState(long lag, long endOffset) {
        TaskState plus(LagInfo info) {
            return new TaskState(lag + Math.max(0, info.offsetLag()), endOffset + info.endOffsetPosition());
        }
    }

    private final Map<String, Integer> subtopologyOfStore;

    public TaskStates(TopologyDescription topology) {
        this(StoreSubtopologies.of(topology));
    }

    /** From each store's subtopology ({@link StoreSubtopologies}). */
    TaskStates(Map<String, Integer> subtopologyOfStore) {
        this.subtopologyOfStore = Map.copyOf(subtopologyOfStore);
    }

    /** The subtopologies that have state: only their tasks can have standbys. */
    public java.util.Set<Integer> statefulSubtopologies() {
        return java.util.Set.copyOf(subtopologyOfStore.values());
    }

    /** Per task id, the sum over its stores of the lags Kafka Streams reported. */
    public Map<String, TaskState> byTask(Map<String, Map<Integer, LagInfo>> storePartitionLags) {
        Map<String, TaskState> tasks = new TreeMap<>();
        storePartitionLags.forEach((store, partitions) -> {
            Integer subtopology = subtopologyOfStore.get(store);
            if (subtopology == null) {
                return;  // a global store: no task owns it
            }
            partitions.forEach((partition, info) -> tasks.merge(subtopology + "_" + partition,
                new TaskState(0, 0).plus(info), (a, b) -> new TaskState(a.lag() + b.lag(), a.endOffset() + b.endOffset())));
        });
        return tasks;
    }
}
