package io.smoothscale.streams;

import java.util.List;
import java.util.Objects;

/**
 * One pod's share of a publication: the tasks it runs, and the copies it keeps restoring.
 *
 * <p>Kafka Streams knows no warmup role: a warmup is a standby the operator placed so that the pod catches up
 * before it takes the task over, so the assignor hands {@code standby} and {@code warmup} to Kafka alike.
 */
public record PodTasks(List<String> active, List<String> standby, List<String> warmup) {

    public PodTasks {
        active = List.copyOf(Objects.requireNonNullElse(active, List.of()));
        standby = List.copyOf(Objects.requireNonNullElse(standby, List.of()));
        warmup = List.copyOf(Objects.requireNonNullElse(warmup, List.of()));
    }

    static final PodTasks NONE = new PodTasks(List.of(), List.of(), List.of());

    boolean isEmpty() {
        return active.isEmpty() && standby.isEmpty() && warmup.isEmpty();
    }
}
