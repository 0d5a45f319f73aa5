package io.smoothscale.streams;

import java.util.List;
import java.util.Optional;
import org.apache.kafka.streams.processor.assignment.TaskAssignor.TaskAssignment;

/**
 * What the leader makes of the publication: the assignment to return, or why Kafka's own must be used.
 *
 * @param assignment the publication as Kafka's assignment; empty when it cannot be followed
 * @param reason why it cannot be followed (null when it is followed)
 * @param detail a sentence for the log: which client, task or field is at fault
 * @param idlePods members the publication does not name yet (new pods the operator has not planned for)
 */
public record PlanResult(Optional<TaskAssignment> assignment, FallbackReason reason, String detail,
                         List<String> idlePods) {

    static PlanResult followed(TaskAssignment assignment, List<String> idlePods) {
        return new PlanResult(Optional.of(assignment), null, "", List.copyOf(idlePods));
    }

    static PlanResult rejected(FallbackReason reason, String detail) {
        return new PlanResult(Optional.empty(), reason, detail, List.of());
    }

    public boolean isFollowed() {
        return assignment.isPresent();
    }
}
