package io.smoothscale.streams;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;
import org.apache.kafka.streams.errors.TaskIdFormatException;
import org.apache.kafka.streams.processor.TaskId;
import org.apache.kafka.streams.processor.assignment.ApplicationState;
import org.apache.kafka.streams.processor.assignment.KafkaStreamsAssignment.AssignedTask;
import org.apache.kafka.streams.processor.assignment.KafkaStreamsState;
import org.apache.kafka.streams.processor.assignment.ProcessId;
import org.apache.kafka.streams.processor.assignment.TaskAssignmentUtils;
import org.apache.kafka.streams.processor.assignment.TaskAssignor.AssignmentError;
import org.apache.kafka.streams.processor.assignment.TaskInfo;

/**
 * Turns a publication into the assignment Kafka Streams runs, keeping every part of it that is safe for the
 * members present and naming what is wrong with the rest. Pure: the group's state in, a decision out;
 * {@link OperatorTaskAssignor} does the logging, metrics and the placement of what is not kept.
 *
 * <p>Followed whole only when every task of the app is active on exactly one member (so nothing is lost and
 * nothing runs twice), every task named exists, and every pod given work is a member. Two situations are not
 * failures: a member the publication does not name yet (a pod that started before the operator planned for
 * it) gets no tasks until the operator publishes one that includes it, instead of Kafka handing it actives it
 * would have to restore from scratch; and a task under revocation (the Python runtime's two-phase hand-over)
 * stays active on the owner it is being taken from until a later generation names its new owner. Standby and
 * warmup copies of tasks without a changelog (stateless, or every store's logging disabled), or on the pod
 * that runs the task, are dropped: Kafka creates no standby for them.
 *
 * <p>What is not kept: the tasks of a pod that is not in the group, of a client that names no pod (or a pod
 * another client names too), a task active on two pods, and names that are no task of the app.
 */
public final class PublishedPlan {
    private PublishedPlan() {}

    public static PlanResult resolve(Publication publication, ApplicationState state) {
        List<PlanResult.Problem> problems = new ArrayList<>();
        Map<ProcessId, KafkaStreamsState> clients = state.kafkaStreamsStates(false);
        Map<String, ProcessId> processOf = pods(clients, problems);
        Map<TaskId, TaskInfo> tasks = state.allTasks();
        long generation = publication.generation();

        Map<TaskId, String> activeOn = new HashMap<>();
        Set<TaskId> twice = new TreeSet<>();
        Map<String, Set<TaskId>> copiesOf = new TreeMap<>();
        for (Map.Entry<String, PodTasks> entry : publication.assignment().entrySet()) {
            String pod = entry.getKey();
            PodTasks roles = entry.getValue();
            if (!roles.isEmpty() && !processOf.containsKey(pod)) {
                problems.add(new PlanResult.Problem(FallbackReason.UNKNOWN_CLIENT, "generation " + generation
                    + " gives tasks to pod " + pod + ", which is not in the group " + processOf.keySet()));
                continue;
            }
            for (String name : roles.active()) {
                Optional<TaskId> task = known(name, tasks, generation, pod, problems);
                if (task.isPresent()) {
                    String other = activeOn.putIfAbsent(task.get(), pod);
                    if (other != null && !other.equals(pod)) {
                        twice.add(task.get());
                        problems.add(new PlanResult.Problem(FallbackReason.DUPLICATE_ACTIVE, "generation "
                            + generation + " makes task " + name + " active on " + other + " and " + pod));
                    }
                }
            }
            Set<TaskId> copies = new HashSet<>();
            for (String name : concat(roles.standby(), roles.warmup())) {
                known(name, tasks, generation, pod, problems).ifPresent(copies::add);
            }
            copiesOf.put(pod, copies);
        }
        twice.forEach(activeOn::remove);  // neither pod is trusted with it: placed by lags instead
        for (Map.Entry<String, Revocation> entry : publication.revoking().entrySet()) {
            String owner = entry.getValue().owner();
            Optional<TaskId> task = known(entry.getKey(), tasks, generation, owner, problems);
            if (task.isPresent() && !activeOn.containsKey(task.get()) && !twice.contains(task.get())
                && processOf.containsKey(owner)) {
                activeOn.put(task.get(), owner);  // still the owner's until the operator names the next one
            }
        }
        List<String> missing = new ArrayList<>();
        for (TaskId task : tasks.keySet()) {
            if (!activeOn.containsKey(task) && !twice.contains(task)) {
                missing.add(task.toString());
            }
        }
        if (!missing.isEmpty()) {
            missing.sort(null);
            problems.add(new PlanResult.Problem(FallbackReason.MISSING_TASK, "generation " + generation
                + " runs tasks " + missing + " on no member of the group " + processOf.keySet()));
        }

        Map<ProcessId, Set<AssignedTask>> kept = new HashMap<>();
        for (ProcessId process : clients.keySet()) {
            kept.put(process, new HashSet<>());
        }
        activeOn.forEach((task, pod) -> kept.get(processOf.get(pod)).add(new AssignedTask(task, AssignedTask.Type.ACTIVE)));
        copiesOf.forEach((pod, copies) -> {
            ProcessId process = processOf.get(pod);
            if (process == null) {
                return;  // a pod given no work that has left: nothing to place
            }
            for (TaskId task : copies) {
                if (HighAvailabilityPlacement.hasChangelog(tasks.get(task)) && !pod.equals(activeOn.get(task))) {
                    kept.get(process).add(new AssignedTask(task, AssignedTask.Type.STANDBY));
                }
            }
        });
        PlanResult result = new PlanResult(kept, problems, idle(publication, processOf));
        if (result.isFollowed()) {
            AssignmentError error = TaskAssignmentUtils.validateTaskAssignment(state, result.assignment());
            if (error != AssignmentError.NONE) {
                return new PlanResult(Map.of(), List.of(new PlanResult.Problem(FallbackReason.INVALID_ASSIGNMENT,
                    "Kafka rejects generation " + generation + ": " + error)), List.of());
            }
        }
        return result;
    }

    /**
     * Each member's pod, for the members that name exactly one pod no other member names; a problem for each
     * that does not (those members are placed by lags, as new members are).
     */
    private static Map<String, ProcessId> pods(Map<ProcessId, KafkaStreamsState> clients,
                                               List<PlanResult.Problem> problems) {
        Map<String, List<ProcessId>> byPod = new TreeMap<>();
        for (KafkaStreamsState client : clients.values()) {
            Optional<String> pod = PodNames.of(client);
            if (pod.isEmpty()) {
                problems.add(new PlanResult.Problem(FallbackReason.UNMAPPED_CLIENT, "client " + client.processId()
                    + " has consumers " + client.consumerClientIds() + " that do not name one pod (is its"
                    + " client.id the pod's name?)"));
            } else {
                byPod.computeIfAbsent(pod.get(), p -> new ArrayList<>()).add(client.processId());
            }
        }
        Map<String, ProcessId> processOf = new TreeMap<>();
        byPod.forEach((pod, processes) -> {
            if (processes.size() == 1) {
                processOf.put(pod, processes.get(0));
            } else {
                problems.add(new PlanResult.Problem(FallbackReason.UNMAPPED_CLIENT, "clients " + processes
                    + " all name pod " + pod));
            }
        });
        return processOf;
    }

    private static List<String> idle(Publication publication, Map<String, ProcessId> processOf) {
        List<String> idle = new ArrayList<>();
        for (String pod : processOf.keySet()) {
            if (!publication.assignment().containsKey(pod)) {
                idle.add(pod);
            }
        }
        return idle;
    }

    private static Optional<TaskId> known(String name, Map<TaskId, TaskInfo> tasks, long generation, String pod,
                                          List<PlanResult.Problem> problems) {
        try {
            TaskId task = TaskId.parse(name);
            if (tasks.containsKey(task)) {
                return Optional.of(task);
            }
        } catch (TaskIdFormatException error) {
            // reported below, as a task the topology does not have
        }
        problems.add(new PlanResult.Problem(FallbackReason.UNKNOWN_TASK, "generation " + generation
            + " names task " + name + " (on pod " + pod + "), which this app's topology does not have"));
        return Optional.empty();
    }

    private static List<String> concat(List<String> first, List<String> second) {
        List<String> all = new ArrayList<>(first);
        all.addAll(second);
        return all;
    }
}
