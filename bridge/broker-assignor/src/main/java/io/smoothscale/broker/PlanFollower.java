package io.smoothscale.broker;

import io.smoothscale.streams.PodTasks;
import io.smoothscale.streams.Publication;
import java.util.ArrayList;
import java.util.Collection;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;
import org.apache.kafka.coordinator.group.api.streams.assignor.GroupAssignment;
import org.apache.kafka.coordinator.group.api.streams.assignor.GroupSpec;
import org.apache.kafka.coordinator.group.api.streams.assignor.MemberAssignment;
import org.apache.kafka.coordinator.group.api.streams.assignor.MemberAssignmentState;
import org.apache.kafka.coordinator.group.api.streams.assignor.TopologyDescriber;

/**
 * Turns the operator's plan (a publication: each pod's active, standby and warmup tasks) into a streams group's
 * assignment, or says why it cannot. Pure: no I/O, no clock, no state, so it runs in bounded time
 * (linear in members and tasks) on the coordinator's threads and is thread-safe.
 *
 * <p>Members are mapped to pods by their client tags: {@code smoothscale.app} names the plan (the app's
 * application id) and {@code smoothscale.pod} the pod ({@code client.tag.smoothscale.pod=<pod name>} in the
 * app's Streams config). A pod with several members (stream threads) spreads its tasks over them, a task
 * staying with the member that holds it. A warmup is given as a standby: 4.4's {@link MemberAssignment} has
 * active and standby tasks only, and a standby on the future owner is what restores its state.
 *
 * <p>The plan is followed only when it cannot lose a task: every task of the topology active on exactly one
 * pod, every pod with actives in the group, no task both active and a copy on one pod, no task the topology
 * lacks. Members whose pod the plan does not name yet get nothing, as in the KIP-924 bridge.
 */
public final class PlanFollower {
    /** Client tag naming the plan (the app's application id). */
    public static final String APP_TAG = "smoothscale.app";
    /** Client tag naming the member's pod. */
    public static final String POD_TAG = "smoothscale.pod";

    private PlanFollower() {}

    /** The decision for {@code group} given the plans of {@code plans}. May throw on a broken {@code group}. */
    public static Decision decide(GroupSpec group, TopologyDescriber topology, PlanSource plans) {
        Map<String, List<String>> membersByPod = new TreeMap<>();
        Set<String> apps = new TreeSet<>();
        List<String> untagged = new ArrayList<>();
        for (String member : new TreeSet<>(group.memberIds())) {
            Map<String, String> tags = group.memberMetadata(member).clientTags();
            String app = tags.get(APP_TAG);
            String pod = tags.get(POD_TAG);
            if (app == null || pod == null || app.isBlank() || pod.isBlank()) {
                untagged.add(member);
                continue;
            }
            apps.add(app);
            membersByPod.computeIfAbsent(pod, p -> new ArrayList<>()).add(member);
        }
        if (apps.isEmpty()) {
            return Decision.fallBack(null, FallbackReason.NOT_MANAGED,
                "no member carries the client tags " + APP_TAG + " and " + POD_TAG);
        }
        String app = apps.iterator().next();
        if (apps.size() > 1 || !untagged.isEmpty()) {
            return Decision.fallBack(app, FallbackReason.UNMAPPED_MEMBER, "members tag the apps " + apps
                + (untagged.isEmpty() ? "" : "; members without both " + APP_TAG + " and " + POD_TAG + ": " + untagged));
        }
        PlanLookup lookup = plans.lookup(app);
        if (lookup.plan() == null) {
            return Decision.fallBack(app, lookup.reason(), lookup.detail());
        }
        Publication plan = lookup.plan();

        Map<String, Boolean> statefulBySubtopology = new TreeMap<>();
        Set<String> tasks = new TreeSet<>();
        for (String subtopology : topology.subtopologies()) {
            statefulBySubtopology.put(subtopology, topology.isStateful(subtopology));
            for (int partition = 0; partition < topology.maxNumInputPartitions(subtopology); partition++) {
                tasks.add(subtopology + "_" + partition);
            }
        }
        Map<String, String> activeOwner = new TreeMap<>();
        for (Map.Entry<String, PodTasks> entry : plan.assignment().entrySet()) {
            String pod = entry.getKey();
            PodTasks roles = entry.getValue();
            for (String task : concat(roles.active(), roles.standby(), roles.warmup())) {
                if (!tasks.contains(task)) {
                    return Decision.fallBack(app, FallbackReason.UNKNOWN_TASK, "generation " + plan.generation()
                        + " gives " + pod + " task " + task + ", which the group's topology does not have");
                }
            }
            Set<String> copies = new HashSet<>(roles.standby());
            copies.addAll(roles.warmup());
            for (String task : roles.active()) {
                String other = activeOwner.put(task, pod);
                if (other != null) {
                    return Decision.fallBack(app, FallbackReason.INVALID_PLAN, "generation " + plan.generation()
                        + " makes task " + task + " active on " + other + " and " + pod);
                }
                if (copies.contains(task)) {
                    return Decision.fallBack(app, FallbackReason.INVALID_PLAN, "generation " + plan.generation()
                        + " gives " + pod + " task " + task + " as active and as a standby or warmup");
                }
            }
            if (!roles.active().isEmpty() && !membersByPod.containsKey(pod)) {
                return Decision.fallBack(app, FallbackReason.POD_NOT_IN_GROUP, "generation " + plan.generation()
                    + " gives active tasks to " + pod + ", which has no member in the group (pods in the group: "
                    + membersByPod.keySet() + ")");
            }
        }
        Set<String> missing = new TreeSet<>(tasks);
        missing.removeAll(activeOwner.keySet());
        if (!missing.isEmpty()) {
            return Decision.fallBack(app, FallbackReason.MISSING_TASK, "generation " + plan.generation()
                + " leaves tasks " + missing + " active nowhere");
        }

        Map<String, MemberAssignment> assignment = new HashMap<>();
        for (Map.Entry<String, List<String>> entry : membersByPod.entrySet()) {
            PodTasks roles = plan.tasksOf(entry.getKey());
            List<String> copies = new ArrayList<>(roles.standby());
            copies.addAll(roles.warmup());
            // A stateless task has nothing to restore: a copy of it is no use, and Kafka never assigns one.
            copies.removeIf(task -> !statefulBySubtopology.get(subtopologyOf(task)));
            assignment.putAll(spread(group, entry.getValue(), roles.active(), copies));
        }
        for (String member : group.memberIds()) {
            assignment.putIfAbsent(member, new MemberAssignment(Map.of(), Map.of()));
        }
        return Decision.follow(app, plan.generation(), new GroupAssignment(assignment));
    }

    /**
     * Spreads a pod's actives and copies over its members: a task stays with the member that holds it in the
     * same role, the others go to the member with the fewest tasks (ties: the smallest member id).
     */
    private static Map<String, MemberAssignment> spread(
        GroupSpec group, List<String> members, Collection<String> actives, Collection<String> copies) {
        Map<String, Map<String, Set<Integer>>> active = new TreeMap<>();
        Map<String, Map<String, Set<Integer>>> standby = new TreeMap<>();
        Map<String, Integer> load = new TreeMap<>();
        for (String member : members) {
            active.put(member, new TreeMap<>());
            standby.put(member, new TreeMap<>());
            load.put(member, 0);
        }
        place(group, members, new TreeSet<>(actives), active, load, true);
        place(group, members, new TreeSet<>(copies), standby, load, false);
        Map<String, MemberAssignment> result = new HashMap<>();
        for (String member : members) {
            result.put(member, new MemberAssignment(active.get(member), standby.get(member)));
        }
        return result;
    }

    private static void place(GroupSpec group, List<String> members, Set<String> tasks,
        Map<String, Map<String, Set<Integer>>> into, Map<String, Integer> load, boolean asActive) {
        List<String> unplaced = new ArrayList<>();
        for (String task : tasks) {
            String holder = null;
            for (String member : members) {
                MemberAssignmentState state = group.memberAssignmentState(member);
                boolean holds = asActive
                    ? holds(state.activeTasks(), task)
                    : holds(state.standbyTasks(), task) || holds(state.warmupTasks(), task);
                if (holds) {
                    holder = member;
                    break;
                }
            }
            if (holder == null) {
                unplaced.add(task);
            } else {
                add(into, load, holder, task);
            }
        }
        for (String task : unplaced) {
            String least = members.get(0);
            for (String member : members) {
                if (load.get(member) < load.get(least)) {
                    least = member;
                }
            }
            add(into, load, least, task);
        }
    }

    private static void add(Map<String, Map<String, Set<Integer>>> into, Map<String, Integer> load, String member,
        String task) {
        into.get(member).computeIfAbsent(subtopologyOf(task), s -> new TreeSet<>()).add(partitionOf(task));
        load.merge(member, 1, Integer::sum);
    }

    private static boolean holds(Map<String, Set<Integer>> tasks, String task) {
        return tasks != null && tasks.getOrDefault(subtopologyOf(task), Set.of()).contains(partitionOf(task));
    }

    /** The subtopology of a task id {@code <subtopology>_<partition>} (a subtopology id may contain '_'). */
    static String subtopologyOf(String task) {
        return task.substring(0, task.lastIndexOf('_'));
    }

    static int partitionOf(String task) {
        return Integer.parseInt(task.substring(task.lastIndexOf('_') + 1));
    }

    @SafeVarargs
    private static List<String> concat(List<String>... lists) {
        List<String> all = new ArrayList<>();
        for (List<String> list : lists) {
            all.addAll(list);
        }
        return all;
    }
}
