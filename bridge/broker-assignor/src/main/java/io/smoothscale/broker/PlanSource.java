package io.smoothscale.broker;

/**
 * Where the assignor finds the operator's latest plan for an app. Called on the group coordinator's threads:
 * an implementation answers from memory, at once, without I/O or blocking, and is thread-safe.
 */
@FunctionalInterface
public interface PlanSource {
    /** The latest plan for {@code app} (the value of its members' {@code smoothscale.app} client tag). */
    PlanLookup lookup(String app);
}
