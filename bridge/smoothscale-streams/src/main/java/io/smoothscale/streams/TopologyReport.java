package io.smoothscale.streams;

import io.prometheus.metrics.core.metrics.GaugeWithCallback;
import io.prometheus.metrics.model.registry.PrometheusRegistry;
import java.util.Map;
import java.util.SortedMap;
import java.util.SortedSet;
import java.util.TreeMap;
import java.util.TreeSet;
import org.apache.kafka.streams.processor.TaskId;
import org.apache.kafka.streams.processor.assignment.TaskInfo;
import org.apache.kafka.streams.processor.assignment.TaskTopicPartition;

/**
 * The app's topology as the group leader sees it in a rebalance ({@code ApplicationState.allTasks()}: every
 * task, its input and changelog partitions, whether it has state), reported on the pod's metrics endpoint so
 * that the operator learns it instead of reading it from a hand-written {@code spec.topology}:
 * {@code smoothscale_bridge_topology_partitions{subtopology, stateful, input_topics, changelog_topics}} is the
 * subtopology's partition count (its number of tasks); topic lists are sorted and comma-separated. Only a pod
 * that has led a rebalance reports it (the last one it saw); the operator takes it from whichever pod does.
 */
public final class TopologyReport {
    public static final String PARTITIONS = "smoothscale_bridge_topology_partitions";

    /** One subtopology: its tasks' count, whether they have state, the topics they read and restore from. */
    public record Subtopology(int partitions, boolean stateful, SortedSet<String> inputTopics,
                              SortedSet<String> changelogTopics) {}

    private volatile SortedMap<Integer, Subtopology> subtopologies = new TreeMap<>();

    public TopologyReport(PrometheusRegistry registry) {
        GaugeWithCallback.builder().name(PARTITIONS)
            .help("Partitions (tasks) of each subtopology of the app, as the group leader last saw them.")
            .labelNames("subtopology", "stateful", "input_topics", "changelog_topics")
            .callback(callback -> subtopologies.forEach((id, sub) -> callback.call(sub.partitions(),
                Integer.toString(id), Boolean.toString(sub.stateful()), String.join(",", sub.inputTopics()),
                String.join(",", sub.changelogTopics()))))
            .register(registry);
    }

    /** Learn the topology from the tasks of a rebalance. */
    void learn(Map<TaskId, TaskInfo> tasks) {
        subtopologies = summarize(tasks);
    }

    public SortedMap<Integer, Subtopology> subtopologies() {
        return subtopologies;
    }

    static SortedMap<Integer, Subtopology> summarize(Map<TaskId, TaskInfo> tasks) {
        SortedMap<Integer, Subtopology> result = new TreeMap<>();
        for (TaskInfo task : tasks.values()) {
            int id = task.id().subtopology();
            Subtopology before = result.getOrDefault(id, new Subtopology(0, false, new TreeSet<>(), new TreeSet<>()));
            SortedSet<String> inputs = new TreeSet<>(before.inputTopics());
            SortedSet<String> changelogs = new TreeSet<>(before.changelogTopics());
            for (TaskTopicPartition partition : task.topicPartitions()) {
                // both at once under topology.optimization=all: a KTable's source topic is its changelog
                if (partition.isChangelog()) {
                    changelogs.add(partition.topicPartition().topic());
                }
                if (partition.isSource()) {
                    inputs.add(partition.topicPartition().topic());
                }
            }
            result.put(id, new Subtopology(before.partitions() + 1, before.stateful() || task.isStateful(), inputs,
                changelogs));
        }
        return result;
    }
}
