package io.smoothscale.broker;

import io.smoothscale.streams.PodTasks;
import io.smoothscale.streams.Publication;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;
import org.apache.kafka.coordinator.group.api.streams.assignor.AssignmentConfigs;
import org.apache.kafka.coordinator.group.api.streams.assignor.GroupAssignment;
import org.apache.kafka.coordinator.group.api.streams.assignor.GroupSpec;
import org.apache.kafka.coordinator.group.api.streams.assignor.MemberAssignmentMetadata;
import org.apache.kafka.coordinator.group.api.streams.assignor.MemberAssignmentState;
import org.apache.kafka.coordinator.group.api.streams.assignor.TopologyDescriber;

/** Streams groups as the coordinator hands them to an assignor, built in a few lines for tests. */
final class Groups {
    private Groups() {}

    record Member(String id, String process, String rack, Map<String, String> tags, Map<String, Set<Integer>> active,
        Map<String, Set<Integer>> standby) implements MemberAssignmentMetadata, MemberAssignmentState {
        @Override public Optional<String> instanceId() { return Optional.empty(); }
        @Override public Optional<String> rackId() { return Optional.ofNullable(rack); }
        @Override public String processId() { return process; }
        @Override public Map<String, String> clientTags() { return tags; }
        @Override public Map<String, Set<Integer>> activeTasks() { return active; }
        @Override public Map<String, Set<Integer>> standbyTasks() { return standby; }
        @Override public Map<String, Set<Integer>> warmupTasks() { return Map.of(); }
        @Override public Map<String, Map<Integer, Long>> taskOffsets() { return Map.of(); }
        @Override public Map<String, Map<Integer, Long>> taskEndOffsets() { return Map.of(); }
    }

    record Configs(int numStandbyReplicas, List<String> rackAwareAssignmentTags) implements AssignmentConfigs {}

    record Group(Map<String, Member> members, AssignmentConfigs configs) implements GroupSpec {
        @Override public java.util.Collection<String> memberIds() { return members.keySet(); }
        @Override public MemberAssignmentMetadata memberMetadata(String id) { return members.get(id); }
        @Override public MemberAssignmentState memberAssignmentState(String id) { return members.get(id); }
    }

    /** Subtopology id -> (partitions, stateful). */
    record Topology(Map<String, Integer> partitions, Set<String> stateful) implements TopologyDescriber {
        @Override public List<String> subtopologies() { return List.copyOf(partitions.keySet()); }
        @Override public int maxNumInputPartitions(String id) { return partitions.get(id); }
        @Override public boolean isStateful(String id) { return stateful.contains(id); }
    }

    /** The sample app's shape: subtopology 0 stateless, 1 stateful, {@code partitions} each. */
    static Topology orders(int partitions) {
        Map<String, Integer> sizes = new TreeMap<>();
        sizes.put("0", partitions);
        sizes.put("1", partitions);
        return new Topology(sizes, Set.of("1"));
    }

    /** A member of pod {@code pod} of app {@code app} that holds {@code active} tasks ("1_3", ...). */
    static Member member(String id, String app, String pod, List<String> active) {
        Map<String, String> tags = new HashMap<>();
        if (app != null) {
            tags.put(PlanFollower.APP_TAG, app);
        }
        if (pod != null) {
            tags.put(PlanFollower.POD_TAG, pod);
        }
        return new Member(id, "process-" + pod, null, tags, tasks(active), Map.of());
    }

    static Group group(int standbys, Member... members) {
        Map<String, Member> byId = new LinkedHashMap<>();
        for (Member member : members) {
            byId.put(member.id(), member);
        }
        return new Group(byId, new Configs(standbys, List.of()));
    }

    static Map<String, Set<Integer>> tasks(List<String> ids) {
        Map<String, Set<Integer>> tasks = new TreeMap<>();
        for (String id : ids) {
            tasks.computeIfAbsent(PlanFollower.subtopologyOf(id), s -> new TreeSet<>()).add(PlanFollower.partitionOf(id));
        }
        return tasks;
    }

    static PodTasks pod(List<String> active, List<String> standby, List<String> warmup) {
        return new PodTasks(active, standby, warmup);
    }

    static Publication plan(long generation, Map<String, PodTasks> assignment) {
        return new Publication(generation, assignment, Map.of());
    }

    static PlanSource source(String app, Publication plan) {
        return requested -> requested.equals(app) ? PlanLookup.found(plan)
            : PlanLookup.none(FallbackReason.NO_PLAN, "no plan for " + requested);
    }

    /** Every member's active tasks in {@code assignment}, as task ids. */
    static Map<String, Set<String>> actives(GroupAssignment assignment) {
        Map<String, Set<String>> result = new TreeMap<>();
        assignment.members().forEach((member, tasks) -> result.put(member, ids(tasks.activeTasks())));
        return result;
    }

    static Map<String, Set<String>> standbys(GroupAssignment assignment) {
        Map<String, Set<String>> result = new TreeMap<>();
        assignment.members().forEach((member, tasks) -> result.put(member, ids(tasks.standbyTasks())));
        return result;
    }

    static Set<String> ids(Map<String, Set<Integer>> tasks) {
        Set<String> ids = new TreeSet<>();
        tasks.forEach((subtopology, partitions) -> partitions.forEach(p -> ids.add(subtopology + "_" + p)));
        return ids;
    }
}
