package io.smoothscale.streams;

import java.util.Map;
import java.util.Optional;
import java.util.Set;
import org.apache.kafka.streams.KafkaStreams;

/** What the pod runs, read from the app's {@link KafkaStreams} (the code API, {@link SmoothscaleBridge#start}). */
final class KafkaStreamsTasks implements TaskSource {
    private static final long SNAPSHOT_NANOS = 500_000_000L;

    private final KafkaStreams streams;
    private final TaskStates taskStates;
    private Map<String, TaskStates.TaskState> snapshot = Map.of();
    private long snapshotAtNanos;

    KafkaStreamsTasks(KafkaStreams streams, TaskStates taskStates) {
        this.streams = streams;
        this.taskStates = taskStates;
    }

    @Override
    public Optional<RunningTasks> running() {
        return PublicationFollower.of(streams);
    }

    /** One lag lookup serves the lag and end-offset gauges of a scrape (it asks the brokers for end offsets). */
    @Override
    public synchronized Map<String, TaskStates.TaskState> states() {
        long now = System.nanoTime();
        if (now - snapshotAtNanos > SNAPSHOT_NANOS) {
            KafkaStreams.State state = streams.state();
            snapshot = state.isRunningOrRebalancing() ? taskStates.byTask(streams.allLocalStorePartitionLags()) : Map.of();
            snapshotAtNanos = now;
        }
        return snapshot;
    }

    @Override
    public Map<String, Double> processRates() {
        return ContractMetrics.processRates(streams::metrics);
    }

    @Override
    public Set<Integer> statefulSubtopologies() {
        return taskStates.statefulSubtopologies();
    }
}
