package io.smoothscale.streams;

import java.util.List;
import java.util.Optional;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.function.Consumer;

/**
 * The newest publication this instance has read, or why the ConfigMap could not be read: written by the
 * ConfigMap watch, read by the assignor on the group leader and by the rebalance trigger and metrics on
 * every instance. A corrupt ConfigMap replaces the publication with its error (the assignor then falls back)
 * rather than keeping an older one the operator has already moved past.
 */
public final class LatestPublication {
    /** What was read last: exactly one of {@code publication} and {@code error} is present. */
    public record Reading(Optional<Publication> publication, Optional<String> error, long readAtNanos) {}

    private volatile Reading reading = new Reading(Optional.empty(), Optional.empty(), System.nanoTime());
    private final List<Consumer<Publication>> listeners = new CopyOnWriteArrayList<>();

    public Reading reading() {
        return reading;
    }

    public Optional<Publication> publication() {
        return reading.publication();
    }

    /** A publication was read; listeners hear of it unless it is the one read last (an informer resync). */
    public synchronized void accept(Publication publication) {
        Optional<Publication> before = reading.publication();
        if (before.isPresent() && before.get().equals(publication)) {
            return;  // keeps readAtNanos: the apply delay counts from the first reading
        }
        reading = new Reading(Optional.of(publication), Optional.empty(), System.nanoTime());
        listeners.forEach(listener -> listener.accept(publication));
    }

    /** {@code publication}, unless something was read already (a watch event may come before the list ends). */
    public synchronized void acceptIfNone(Publication publication) {
        if (reading.publication().isEmpty() && reading.error().isEmpty()) {
            accept(publication);
        }
    }

    /** The ConfigMap is gone or holds no valid publication. */
    public synchronized void reject(String error) {
        reading = new Reading(Optional.empty(), Optional.of(error), System.nanoTime());
    }

    public void onChange(Consumer<Publication> listener) {
        listeners.add(listener);
    }
}
