package io.smoothscale.streams;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.TreeMap;
import org.apache.kafka.streams.errors.TaskIdFormatException;
import org.apache.kafka.streams.processor.TaskId;
import org.apache.kafka.streams.processor.assignment.ApplicationState;
import org.apache.kafka.streams.processor.assignment.KafkaStreamsAssignment;
import org.apache.kafka.streams.processor.assignment.KafkaStreamsAssignment.AssignedTask;
import org.apache.kafka.streams.processor.assignment.KafkaStreamsState;
import org.apache.kafka.streams.processor.assignment.ProcessId;
import org.apache.kafka.streams.processor.assignment.TaskAssignmentUtils;
import org.apache.kafka.streams.processor.assignment.TaskAssignor.AssignmentError;
import org.apache.kafka.streams.processor.assignment.TaskAssignor.TaskAssignment;
import org.apache.kafka.streams.processor.assignment.TaskInfo;

/**
 * Turns a publication into the assignment Kafka Streams runs, or says why it cannot be followed. Pure: the
 * group's state in, a decision out; {@link OperatorTaskAssignor} does the logging, metrics and fallback.
 *
 * <p>Followed only when every task of the app is active on exactly one member (so nothing is lost and
 * nothing runs twice), every task named exists, and every pod given work is a member. Two situations are not
 * failures: a member the publication does not name yet (a pod that started before the operator planned for
 * it) gets no tasks until the operator publishes one that includes it, instead of Kafka handing it actives it
 * would have to restore from scratch; and a task under revocation (the Python runtime's two-phase hand-over)
 * stays active on the owner it is being taken from until a later generation names its new owner. Standby and
 * warmup copies of stateless tasks, or on the pod that runs the task, are dropped: Kafka has no use for them.
 */
public final class PublishedPlan {
    private PublishedPlan() {}

    public static PlanResult resolve(Publication publication, ApplicationState state) {
        Map<ProcessId, KafkaStreamsState> clients = state.kafkaStreamsStates(false);
        Map<String, ProcessId> processOf = new TreeMap<>();
        for (KafkaStreamsState client : clients.values()) {
            Optional<String> pod = PodNames.of(client);
            if (pod.isEmpty()) {
                return PlanResult.rejected(FallbackReason.UNMAPPED_CLIENT, "client " + client.processId()
                    + " has consumers " + client.consumerClientIds() + " that do not name one pod (is its"
                    + " client.id the pod's name?)");
            }
            ProcessId other = processOf.putIfAbsent(pod.get(), client.processId());
            if (other != null) {
                return PlanResult.rejected(FallbackReason.UNMAPPED_CLIENT, "clients " + other + " and "
                    + client.processId() + " both name pod " + pod.get());
            }
        }
        Map<TaskId, TaskInfo> tasks = state.allTasks();

        Map<TaskId, String> activeOn = new HashMap<>();
        Map<String, Set<TaskId>> standbysOf = new TreeMap<>();
        for (Map.Entry<String, PodTasks> entry : publication.assignment().entrySet()) {
            String pod = entry.getKey();
            PodTasks roles = entry.getValue();
            if (!roles.isEmpty() && !processOf.containsKey(pod)) {
                return PlanResult.rejected(FallbackReason.UNKNOWN_CLIENT, "generation "
                    + publication.generation() + " gives tasks to pod " + pod + ", which is not in the group "
                    + processOf.keySet());
            }
            for (String name : roles.active()) {
                Optional<TaskId> task = known(name, tasks);
                if (task.isEmpty()) {
                    return unknownTask(publication, name, pod);
                }
                String twice = activeOn.put(task.get(), pod);
                if (twice != null && !twice.equals(pod)) {
                    return PlanResult.rejected(FallbackReason.DUPLICATE_ACTIVE, "generation "
                        + publication.generation() + " makes task " + name + " active on " + twice + " and " + pod);
                }
            }
            Set<TaskId> copies = new HashSet<>();
            for (String name : concat(roles.standby(), roles.warmup())) {
                Optional<TaskId> task = known(name, tasks);
                if (task.isEmpty()) {
                    return unknownTask(publication, name, pod);
                }
                copies.add(task.get());
            }
            standbysOf.put(pod, copies);
        }
        for (Map.Entry<String, Revocation> entry : publication.revoking().entrySet()) {
            Optional<TaskId> task = known(entry.getKey(), tasks);
            if (task.isEmpty()) {
                return unknownTask(publication, entry.getKey(), entry.getValue().owner());
            }
            String owner = entry.getValue().owner();
            if (!activeOn.containsKey(task.get()) && processOf.containsKey(owner)) {
                activeOn.put(task.get(), owner);  // still the owner's until the operator names the next one
            }
        }
        List<String> missing = new ArrayList<>();
        for (TaskId task : tasks.keySet()) {
            if (!activeOn.containsKey(task)) {
                missing.add(task.toString());
            }
        }
        if (!missing.isEmpty()) {
            missing.sort(null);
            return PlanResult.rejected(FallbackReason.MISSING_TASK, "generation " + publication.generation()
                + " runs tasks " + missing + " on no member of the group " + processOf.keySet());
        }

        Map<ProcessId, Set<AssignedTask>> assigned = new HashMap<>();
        for (ProcessId process : clients.keySet()) {
            assigned.put(process, new HashSet<>());
        }
        activeOn.forEach((task, pod) -> assigned.get(processOf.get(pod)).add(
            new AssignedTask(task, AssignedTask.Type.ACTIVE)));
        standbysOf.forEach((pod, copies) -> {
            ProcessId process = processOf.get(pod);
            if (process == null) {
                return;  // a pod given no work that has left: nothing to place
            }
            for (TaskId task : copies) {
                if (tasks.get(task).isStateful() && !pod.equals(activeOn.get(task))) {
                    assigned.get(process).add(new AssignedTask(task, AssignedTask.Type.STANDBY));
                }
            }
        });
        List<KafkaStreamsAssignment> assignments = new ArrayList<>();
        assigned.forEach((process, set) -> assignments.add(KafkaStreamsAssignment.of(process, set)));
        TaskAssignment assignment = new TaskAssignment(assignments);
        AssignmentError error = TaskAssignmentUtils.validateTaskAssignment(state, assignment);
        if (error != AssignmentError.NONE) {
            return PlanResult.rejected(FallbackReason.INVALID_ASSIGNMENT, "Kafka rejects generation "
                + publication.generation() + ": " + error);
        }
        List<String> idle = new ArrayList<>();
        for (String pod : processOf.keySet()) {
            if (!publication.assignment().containsKey(pod)) {
                idle.add(pod);
            }
        }
        return PlanResult.followed(assignment, idle);
    }

    private static Optional<TaskId> known(String name, Map<TaskId, TaskInfo> tasks) {
        try {
            TaskId task = TaskId.parse(name);
            return tasks.containsKey(task) ? Optional.of(task) : Optional.empty();
        } catch (TaskIdFormatException error) {
            return Optional.empty();
        }
    }

    private static PlanResult unknownTask(Publication publication, String task, String pod) {
        return PlanResult.rejected(FallbackReason.UNKNOWN_TASK, "generation " + publication.generation()
            + " names task " + task + " (on pod " + pod + "), which this app's topology does not have");
    }

    private static List<String> concat(List<String> first, List<String> second) {
        List<String> all = new ArrayList<>(first);
        all.addAll(second);
        return all;
    }
}
