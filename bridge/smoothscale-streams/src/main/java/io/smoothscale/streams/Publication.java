package io.smoothscale.streams;

import java.util.Map;
import java.util.Objects;
import java.util.TreeMap;

/**
 * One generation the operator published in the app's assignment ConfigMap: every pod's tasks, and the
 * hand-overs the operator still waits for (the Python client library's two-phase revoke; a publication for
 * a Kafka Streams app carries none, because Kafka's cooperative protocol revokes before it reassigns).
 *
 * <p>Task ids are Kafka Streams' own ({@code "<subtopology>_<partition>"}), pod names are the pods' names.
 */
public record Publication(long generation, Map<String, PodTasks> assignment, Map<String, Revocation> revoking) {
    /** Generation 0: the ConfigMap does not exist yet (the operator has published nothing for the app). */
    public static final Publication NOTHING = new Publication(0, Map.of(), Map.of());

    public Publication {
        if (generation < 0) {
            throw new IllegalArgumentException("generation must be >= 0, got " + generation);
        }
        assignment = Map.copyOf(new TreeMap<>(Objects.requireNonNullElse(assignment, Map.of())));
        revoking = Map.copyOf(Objects.requireNonNullElse(revoking, Map.of()));
    }

    /** Whether this is {@link #NOTHING}: no plan to follow, Kafka's own assignment runs meanwhile. */
    public boolean isNothing() {
        return generation == 0 && assignment.isEmpty();
    }

    /** The tasks of {@code pod}: nothing when the publication does not name it. */
    public PodTasks tasksOf(String pod) {
        return assignment.getOrDefault(pod, PodTasks.NONE);
    }
}
