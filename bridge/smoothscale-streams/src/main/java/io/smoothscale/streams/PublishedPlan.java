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
 * <p>A pod the publication gives work that is not in the group (it crashed, or was deleted, after the operator
 * published) is no reason to drop the plan: the plan's standbys exist for exactly this. Its active tasks fail
 * over ({@link PlanResult#failover()}): {@link OperatorTaskAssignor} runs them where their most caught-up copy
 * is, as Kafka's high-availability assignor would, and keeps the rest of the plan. So does an active the plan
 * moves onto a member not caught up on it while the member that ran it is: the operator never plans such a
 * move (KIP-441's rule), so that plan predates the pod losing its state (restarted without its volume), and
 * following it would restore the task from scratch while it stops processing. Only when no pod the
 * publication gives work is in the group was it written for other members. Tasks the publication names
 * nowhere are new to the app (more input partitions, a new subtopology) since the operator planned: they are
 * placed the same way ({@link PlanResult#unplanned()}) until the operator plans with the topology this
 * leader reports.
 *
 * <p>What is not kept: the tasks of a client that names no pod (or a pod another client names too), a task
 * active on two pods, and names that are no task of the app.
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
        Map<String, List<TaskId>> failover = new TreeMap<>();
        for (Map.Entry<String, PodTasks> entry : publication.assignment().entrySet()) {
            String pod = entry.getKey();
            PodTasks roles = entry.getValue();
            if (!roles.isEmpty() && !processOf.containsKey(pod)) {
                List<TaskId> actives = new ArrayList<>();
                roles.active().forEach(name -> known(name, tasks, generation, pod, problems).ifPresent(actives::add));
                failover.put(pod, actives);
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
        if (!failover.isEmpty() && failover.keySet().containsAll(givenWork(publication))) {
            problems.add(new PlanResult.Problem(FallbackReason.UNKNOWN_CLIENT, "generation " + generation
                + " gives tasks only to pods " + failover.keySet() + ", none of which is in the group "
                + processOf.keySet()));
        }
        notCaughtUp(activeOn, state, clients, processOf).forEach((pod, stale) -> {
            stale.forEach(activeOn::remove);
            failover.computeIfAbsent(pod, p -> new ArrayList<>()).addAll(stale);
        });
        for (Map.Entry<String, Revocation> entry : publication.revoking().entrySet()) {
            String owner = entry.getValue().owner();
            Optional<TaskId> task = known(entry.getKey(), tasks, generation, owner, problems);
            if (task.isPresent() && !activeOn.containsKey(task.get()) && !twice.contains(task.get())
                && processOf.containsKey(owner)) {
                activeOn.put(task.get(), owner);  // still the owner's until the operator names the next one
            }
        }
        Set<TaskId> failingOver = new HashSet<>();
        failover.values().forEach(failingOver::addAll);
        Set<String> named = named(publication);
        List<String> missing = new ArrayList<>();
        List<TaskId> unplanned = new ArrayList<>();
        for (TaskId task : tasks.keySet()) {
            if (activeOn.containsKey(task) || twice.contains(task) || failingOver.contains(task)) {
                continue;
            }
            if (named.contains(task.toString())) {
                missing.add(task.toString());
            } else {
                unplanned.add(task);
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
        failover.values().removeIf(List::isEmpty);
        unplanned.sort(null);
        PlanResult result = new PlanResult(kept, problems, idle(publication, processOf), failover, unplanned);
        if (result.isFollowed() && !result.needsPlacement()) {
            AssignmentError error = TaskAssignmentUtils.validateTaskAssignment(state, result.assignment());
            if (error != AssignmentError.NONE) {
                return new PlanResult(Map.of(), List.of(new PlanResult.Problem(FallbackReason.INVALID_ASSIGNMENT,
                    "Kafka rejects generation " + generation + ": " + error)), List.of(), Map.of(), List.of());
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

    /** Every task name the publication gives any pod, in any role, or revokes. */
    private static Set<String> named(Publication publication) {
        Set<String> names = new HashSet<>(publication.revoking().keySet());
        publication.assignment().values().forEach(roles -> {
            names.addAll(roles.active());
            names.addAll(roles.standby());
            names.addAll(roles.warmup());
        });
        return names;
    }

    /** The pods the publication gives any task, as active, standby or warmup. */
    private static Set<String> givenWork(Publication publication) {
        Set<String> pods = new TreeSet<>();
        publication.assignment().forEach((pod, roles) -> {
            if (!roles.isEmpty()) {
                pods.add(pod);
            }
        });
        return pods;
    }

    /**
     * Per pod, the actives with a changelog the plan moves onto it although it is not caught up on them while
     * the member that ran them until this rebalance is (lags as Kafka's high-availability assignor reads them,
     * within {@code acceptable.recovery.lag}): KIP-441's rule, which the operator's plans keep, so such a plan
     * was made before the pod lost its state. A task without a changelog (stateless, or its stores' logging
     * disabled) has nothing to catch up on: it goes where the plan puts it. The lags are read only when the
     * plan moves an active.
     */
    private static Map<String, List<TaskId>> notCaughtUp(Map<TaskId, String> activeOn, ApplicationState state,
                                                         Map<ProcessId, KafkaStreamsState> clients,
                                                         Map<String, ProcessId> processOf) {
        Map<TaskId, ProcessId> ranBy = new HashMap<>();
        clients.values().forEach(client -> client.previousActiveTasks().forEach(task ->
            ranBy.put(task, client.processId())));
        Map<String, List<TaskId>> stale = new TreeMap<>();
        CatchUp catchUp = null;
        for (Map.Entry<TaskId, String> entry : new TreeMap<>(activeOn).entrySet()) {
            TaskId task = entry.getKey();
            ProcessId owner = processOf.get(entry.getValue());
            ProcessId ran = ranBy.get(task);
            boolean restorable = HighAvailabilityPlacement.hasChangelog(state.allTasks().get(task));
            if (ran == null || ran.equals(owner) || !restorable) {
                continue;
            }
            catchUp = catchUp == null ? CatchUp.of(state) : catchUp;
            if (!catchUp.caughtUp(owner, task) && catchUp.caughtUp(ran, task)) {
                stale.computeIfAbsent(entry.getValue(), p -> new ArrayList<>()).add(task);
            }
        }
        return stale;
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
