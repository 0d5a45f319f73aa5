package io.smoothscale.streams;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import org.apache.kafka.streams.processor.TaskId;
import org.apache.kafka.streams.processor.assignment.KafkaStreamsAssignment;
import org.apache.kafka.streams.processor.assignment.KafkaStreamsAssignment.AssignedTask;
import org.apache.kafka.streams.processor.assignment.ProcessId;
import org.apache.kafka.streams.processor.assignment.TaskAssignor.TaskAssignment;

/**
 * What the leader makes of the publication: the part of it that can be followed, and what is wrong with the
 * rest. With no problem the kept part is the whole assignment; otherwise {@link HighAvailabilityPlacement}
 * places what is left around it.
 *
 * @param kept per member present, the tasks the publication gives it that are safe to run (every member of
 *             the group has an entry, possibly empty)
 * @param problems why the publication cannot be followed as it is, in the order found (empty: followed)
 * @param idlePods members the publication does not name yet (new pods the operator has not planned for)
 * @param failover per pod, the actives the publication gives it that run elsewhere this generation: the pod is
 *                 not in the group, or is not caught up on them while the member that ran them is (see
 *                 {@link PublishedPlan})
 * @param unplanned tasks of the app the publication names nowhere: new since the operator planned (a topology
 *                  change); with {@code failover}, placed around the kept part by lags
 */
public record PlanResult(Map<ProcessId, Set<AssignedTask>> kept, List<Problem> problems, List<String> idlePods,
                         Map<String, List<TaskId>> failover, List<TaskId> unplanned) {
    /** One reason the publication cannot be followed, and a sentence for the log naming the pod or task. */
    public record Problem(FallbackReason reason, String detail) {}

    public PlanResult {
        kept = Map.copyOf(kept);
        problems = List.copyOf(problems);
        idlePods = List.copyOf(idlePods);
        failover = Map.copyOf(failover);
        unplanned = List.copyOf(unplanned);
    }

    /** Whether some tasks must be placed around the kept part: a fail-over, or tasks new to the plan. */
    public boolean needsPlacement() {
        return !failover.isEmpty() || !unplanned.isEmpty();
    }

    public boolean isFollowed() {
        return problems.isEmpty();
    }

    /** The kept part as Kafka's assignment: the whole of it when followed and nothing needs placing. */
    public TaskAssignment assignment() {
        List<KafkaStreamsAssignment> assignments = new ArrayList<>();
        kept.forEach((process, tasks) -> assignments.add(KafkaStreamsAssignment.of(process, tasks)));
        return new TaskAssignment(assignments);
    }
}
