package io.smoothscale.broker;

import java.util.Locale;

/**
 * Why the assignor returned Kafka's own sticky assignment instead of the operator's plan: the {@code reason} tag
 * of the fallback metric and the word in the broker's log line.
 */
public enum FallbackReason {
    /** No member carries the {@code smoothscale.app} client tag: the operator does not run this group's app. */
    NOT_MANAGED,
    /** Some members carry no or another {@code smoothscale.app}/{@code smoothscale.pod} tag than the others. */
    UNMAPPED_MEMBER,
    /** No plan for the app has been read (plugin not configured, plan topic unreadable or not read to its end). */
    NO_PLAN,
    /** The plan topic holds something for the app that is not a publication. */
    CORRUPT_PLAN,
    /** The plan names a task the group's topology does not have (a plan for another topology). */
    UNKNOWN_TASK,
    /** A task of the topology is active nowhere in the plan. */
    MISSING_TASK,
    /** A task is active on two pods, or a pod holds a task as active and as a copy. */
    INVALID_PLAN,
    /** The plan gives active tasks to a pod that has no member in the group (it was written for other members). */
    POD_NOT_IN_GROUP,
    /** Following the plan failed unexpectedly (the exception is in the log). */
    ERROR;

    /** The metric tag: lower case with dashes, as Kafka's metric tags are. */
    public String label() {
        return name().toLowerCase(Locale.ROOT).replace('_', '-');
    }
}
