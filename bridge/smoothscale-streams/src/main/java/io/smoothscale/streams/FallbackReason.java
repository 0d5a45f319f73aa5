package io.smoothscale.streams;

import java.util.Locale;

/**
 * Why the assignor did not return the operator's assignment as published (a metric label and a log word). In
 * every case it keeps what it can of the plan and places the rest as Kafka's high-availability assignor would.
 */
public enum FallbackReason {
    /** No ConfigMap read yet, or the app was started without the bridge's configuration. */
    NO_PUBLICATION,
    /** The ConfigMap holds something that is not a publication. */
    CORRUPT_PUBLICATION,
    /** A client's consumers do not name one pod, or two clients name the same pod. */
    UNMAPPED_CLIENT,
    /** The publication gives tasks to a pod that is not in the group: it was written for other members. */
    UNKNOWN_CLIENT,
    /** The publication names a task this app's topology does not have. */
    UNKNOWN_TASK,
    /** A task of the app is active nowhere in the publication (nor held by a revocation's owner). */
    MISSING_TASK,
    /** A task is active on two pods in the publication. */
    DUPLICATE_ACTIVE,
    /** Kafka's own validation rejected the assignment built from the publication. */
    INVALID_ASSIGNMENT,
    /** The publication has left members of the group without work for longer than {@link PlanPatience#LIMIT}. */
    PLAN_EXPIRED,
    /** Deciding threw an exception: the assignment is Kafka's own, so the leader's stream thread lives on. */
    ASSIGNOR_ERROR;

    /** The metric label: lower case, as Prometheus label values usually are. */
    public String label() {
        return name().toLowerCase(Locale.ROOT);
    }
}
