package io.smoothscale.streams;

import java.util.Map;
import java.util.Optional;
import java.util.Set;

/**
 * Where the bridge reads what this pod runs: from the app's {@code KafkaStreams} object
 * ({@link KafkaStreamsTasks}, the code API) or from the metrics Kafka Streams reports to
 * {@link SmoothscaleMetricsReporter} ({@link ReportedTaskSource}, configuration alone).
 */
interface TaskSource extends AutoCloseable {
    /** The tasks this instance runs; empty while it is not RUNNING. */
    Optional<RunningTasks> running();

    /** Lag and changelog end of every task this instance holds state for. */
    Map<String, TaskStates.TaskState> states();

    /** Records per second of every active task (Kafka records them at {@code metrics.recording.level=DEBUG}). */
    Map<String, Double> processRates();

    /** The subtopologies that have state: only their tasks can have standbys. */
    Set<Integer> statefulSubtopologies();

    @Override
    default void close() {}
}
