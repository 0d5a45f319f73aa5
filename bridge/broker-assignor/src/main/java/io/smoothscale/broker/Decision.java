package io.smoothscale.broker;

import java.util.Objects;
import org.apache.kafka.coordinator.group.api.streams.assignor.GroupAssignment;

/**
 * What {@link PlanFollower} decided for one assignment: the plan's assignment for the group, or the reason to
 * fall back to Kafka's own assignor. {@code app} is the group's {@code smoothscale.app} tag (null when none).
 */
public record Decision(String app, long generation, GroupAssignment assignment, FallbackReason reason, String detail) {

    public Decision {
        if ((assignment == null) == (reason == null)) {
            throw new IllegalArgumentException("a decision is either an assignment or a fallback reason");
        }
        detail = Objects.requireNonNullElse(detail, "");
    }

    static Decision follow(String app, long generation, GroupAssignment assignment) {
        return new Decision(app, generation, assignment, null, "");
    }

    static Decision fallBack(String app, FallbackReason reason, String detail) {
        return new Decision(app, -1, null, reason, detail);
    }

    /** Whether the plan is followed. */
    public boolean followed() {
        return assignment != null;
    }
}
