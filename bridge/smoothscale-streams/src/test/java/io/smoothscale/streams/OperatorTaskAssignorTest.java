package io.smoothscale.streams;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;
import org.apache.kafka.streams.processor.TaskId;
import org.apache.kafka.streams.processor.assignment.KafkaStreamsAssignment;
import org.apache.kafka.streams.processor.assignment.KafkaStreamsAssignment.AssignedTask;
import org.apache.kafka.streams.processor.assignment.ProcessId;
import org.apache.kafka.streams.processor.assignment.TaskAssignmentUtils;
import org.apache.kafka.streams.processor.assignment.TaskAssignor.AssignmentError;
import org.apache.kafka.streams.processor.assignment.TaskAssignor.TaskAssignment;
import org.junit.jupiter.api.Test;

class OperatorTaskAssignorTest {
    private static final String LONG_POD = "orders-enrichment-with-a-very-long-statefulset-name-1234567-0";

    private final SmoothscaleBridge bridge = SmoothscaleBridgeTest.bridgeOf("orders-0");

    /** Subtopology 0 stateful (4 tasks), subtopology 1 stateless (2 tasks). */
    private static Group group() {
        return new Group().tasks(0, 4, true).tasks(1, 2, false).standbys(1);
    }

    private static PodTasks pod(List<String> active, List<String> standby, List<String> warmup) {
        return new PodTasks(active, standby, warmup);
    }

    private TaskAssignment assign(Group group) {
        OperatorTaskAssignor assignor = new OperatorTaskAssignor();
        assignor.configure(Map.of(SmoothscaleBridge.CONFIG_KEY, bridge));
        TaskAssignment assignment = assignor.assign(group);
        assertSafe(group, assignment);
        return assignment;
    }

    /** What Kafka itself checks, and what it does not: every task of the app active on exactly one client. */
    static void assertSafe(Group group, TaskAssignment assignment) {
        assertEquals(AssignmentError.NONE, TaskAssignmentUtils.validateTaskAssignment(group, assignment));
        Map<TaskId, Integer> actives = new HashMap<>();
        for (KafkaStreamsAssignment client : assignment.assignment()) {
            client.tasks().values().stream().filter(t -> t.type() == AssignedTask.Type.ACTIVE)
                .forEach(t -> actives.merge(t.id(), 1, Integer::sum));
        }
        for (TaskId task : group.allTasks().keySet()) {
            assertEquals(1, actives.getOrDefault(task, 0), "task " + task + " must be active exactly once");
        }
    }

    private static Set<String> tasksOf(TaskAssignment assignment, ProcessId process, AssignedTask.Type type) {
        for (KafkaStreamsAssignment client : assignment.assignment()) {
            if (client.processId().equals(process)) {
                Set<String> ids = new TreeSet<>();
                client.tasks().values().stream().filter(t -> t.type() == type).forEach(t -> ids.add(t.id().toString()));
                return ids;
            }
        }
        throw new AssertionError("no assignment for " + process);
    }

    private static Set<TaskId> ids(String... tasks) {
        Set<TaskId> set = new TreeSet<>();
        for (String task : tasks) {
            set.add(TaskId.parse(task));
        }
        return set;
    }

    @Test
    void returnsThePublishedActivesAndStandbysAndWarmupsAsStandbys() {
        Group group = group().member("orders-0", 2, ids("0_0", "0_1", "0_2", "1_0"))
            .member(LONG_POD, 1, ids("0_3", "1_1")).lag(LONG_POD, "0_2", 0);
        bridge.publications().accept(new Publication(7, Map.of(
            "orders-0", pod(List.of("0_0", "0_1", "1_0"), List.of("0_3"), List.of()),
            LONG_POD, pod(List.of("0_2", "0_3", "1_1"), List.of("0_0"), List.of("0_1"))), Map.of()));

        TaskAssignment assignment = assign(group);

        assertEquals(Set.of("0_0", "0_1", "1_0"), tasksOf(assignment, group.process("orders-0"), AssignedTask.Type.ACTIVE));
        assertEquals(Set.of("0_3"), tasksOf(assignment, group.process("orders-0"), AssignedTask.Type.STANDBY));
        assertEquals(Set.of("0_2", "0_3", "1_1"), tasksOf(assignment, group.process(LONG_POD), AssignedTask.Type.ACTIVE));
        assertEquals(Set.of("0_0", "0_1"), tasksOf(assignment, group.process(LONG_POD), AssignedTask.Type.STANDBY));
        assertEquals(1.0, bridge.assignorMetrics().followedCount());
    }

    @Test
    void aMemberThePublicationDoesNotNameYetGetsNoTasks() {
        Group group = group().member("orders-0", 1, ids()).member("orders-1", 1, ids()).member("orders-2", 1, ids());
        bridge.publications().accept(new Publication(3, Map.of(
            "orders-0", pod(List.of("0_0", "0_1", "1_0"), List.of(), List.of()),
            "orders-1", pod(List.of("0_2", "0_3", "1_1"), List.of(), List.of())), Map.of()));

        TaskAssignment assignment = assign(group);

        assertEquals(Set.of(), tasksOf(assignment, group.process("orders-2"), AssignedTask.Type.ACTIVE));
        assertEquals(Set.of(), tasksOf(assignment, group.process("orders-2"), AssignedTask.Type.STANDBY));
        assertEquals(1.0, bridge.assignorMetrics().followedCount());
    }

    @Test
    void aTaskUnderRevocationStaysActiveOnItsOwnerUntilANewOwnerIsNamed() {
        Group group = group().member("orders-0", 1, ids("0_0", "0_1", "1_0")).member("orders-1", 1, ids("0_2", "0_3", "1_1"));
        bridge.publications().accept(new Publication(5, Map.of(
            "orders-0", pod(List.of("0_1", "1_0"), List.of(), List.of()),
            "orders-1", pod(List.of("0_2", "0_3", "1_1"), List.of(), List.of("0_0"))),
            Map.of("0_0", new Revocation("orders-0", 5))));

        TaskAssignment assignment = assign(group);

        assertEquals(Set.of("0_0", "0_1", "1_0"), tasksOf(assignment, group.process("orders-0"), AssignedTask.Type.ACTIVE));
        assertEquals(Set.of("0_0"), tasksOf(assignment, group.process("orders-1"), AssignedTask.Type.STANDBY));
    }

    @Test
    void copiesOfStatelessTasksAndOfAPodsOwnActivesAreDropped() {
        Group group = group().member("orders-0", 1, ids()).member("orders-1", 1, ids());
        bridge.publications().accept(new Publication(2, Map.of(
            "orders-0", pod(List.of("0_0", "0_1", "1_0"), List.of("1_1", "0_0"), List.of()),
            "orders-1", pod(List.of("0_2", "0_3", "1_1"), List.of(), List.of("1_0", "0_1"))), Map.of()));

        TaskAssignment assignment = assign(group);

        assertEquals(Set.of(), tasksOf(assignment, group.process("orders-0"), AssignedTask.Type.STANDBY));
        assertEquals(Set.of("0_1"), tasksOf(assignment, group.process("orders-1"), AssignedTask.Type.STANDBY));
    }

    private void assertFallsBack(Group group, FallbackReason reason) {
        TaskAssignment assignment = assign(group);  // assign() checks the fallback is a safe assignment too
        assertEquals(1.0, bridge.assignorMetrics().fallbackCount(reason), reason + " counted once");
        assertEquals(0.0, bridge.assignorMetrics().followedCount());
        assertTrue(assignment.assignment().size() == group.kafkaStreamsStates(false).size());
    }

    private static Group twoMembers() {
        return group().member("orders-0", 1, ids("0_0", "0_1", "1_0")).member("orders-1", 1, ids("0_2", "0_3", "1_1"));
    }

    private static Map<String, PodTasks> fullPlan() {
        return new HashMap<>(Map.of(
            "orders-0", pod(List.of("0_0", "0_1", "1_0"), List.of(), List.of()),
            "orders-1", pod(List.of("0_2", "0_3", "1_1"), List.of(), List.of())));
    }

    @Test
    void noPublicationReadYetFallsBack() {
        assertFallsBack(twoMembers(), FallbackReason.NO_PUBLICATION);
    }

    @Test
    void nothingPublishedYetFallsBack() {
        bridge.publications().acceptIfNone(Publication.NOTHING);
        assertFallsBack(twoMembers(), FallbackReason.NO_PUBLICATION);
    }

    @Test
    void aCorruptConfigMapFallsBack() {
        bridge.publications().accept(new Publication(1, fullPlan(), Map.of()));
        bridge.publications().reject("assignment is not gzip data");
        assertFallsBack(twoMembers(), FallbackReason.CORRUPT_PUBLICATION);
    }

    @Test
    void withoutTheBridgeInTheConfigEveryRebalanceIsKafkasOwn() {
        OperatorTaskAssignor assignor = new OperatorTaskAssignor();
        assignor.configure(Map.of());
        Group group = twoMembers();
        assertSafe(group, assignor.assign(group));
    }

    @Test
    void aPublicationGivingTasksOnlyToPodsOutsideTheGroupFallsBack() {
        bridge.publications().accept(new Publication(4, Map.of(
            "orders-8", pod(List.of("0_0", "0_1", "1_0"), List.of(), List.of()),
            "orders-9", pod(List.of("0_2", "0_3", "1_1"), List.of("0_0"), List.of())), Map.of()));
        assertFallsBack(twoMembers(), FallbackReason.UNKNOWN_CLIENT);
    }

    @Test
    void copiesForAPodOutsideTheGroupWaitAndThePlanIsFollowed() {
        Map<String, PodTasks> plan = fullPlan();
        plan.put("orders-9", pod(List.of(), List.of("0_0"), List.of("0_2")));
        bridge.publications().accept(new Publication(4, plan, Map.of()));
        assign(twoMembers());
        assertEquals(1.0, bridge.assignorMetrics().followedCount());
        assertEquals(0.0, bridge.assignorMetrics().failoverCount());
    }

    @Test
    void anActiveGivenToAPodWithoutItsStateStaysWhereItRanAndThePodWarmsUp() {
        // orders-1 restarted without its volume after the operator published: the plan still gives it 0_2 and
        // 0_3, which orders-0 has run since (its standbys took over); 1_1 is stateless and moves freely.
        Group group = group().member("orders-0", 1, ids("0_0", "0_1", "1_0", "0_2", "0_3"))
            .member("orders-1", 1, ids("1_1"));
        bridge.publications().accept(new Publication(4, fullPlan(), Map.of()));

        TaskAssignment assignment = assign(group);

        assertEquals(Set.of("0_0", "0_1", "0_2", "0_3", "1_0"),
            tasksOf(assignment, group.process("orders-0"), AssignedTask.Type.ACTIVE));
        assertEquals(Set.of("1_1"), tasksOf(assignment, group.process("orders-1"), AssignedTask.Type.ACTIVE));
        assertTrue(tasksOf(assignment, group.process("orders-1"), AssignedTask.Type.STANDBY).containsAll(
            Set.of("0_2", "0_3")), "warmups toward the plan's owner, as Kafka's high-availability assignor starts them");
        assertEquals(1.0, bridge.assignorMetrics().failoverCount());
        for (FallbackReason reason : FallbackReason.values()) {
            assertEquals(0.0, bridge.assignorMetrics().fallbackCount(reason), reason.label());
        }
    }

    @Test
    void aPodOutsideTheGroupWithNothingToDoIsHarmless() {
        Map<String, PodTasks> plan = fullPlan();
        plan.put("orders-9", PodTasks.NONE);
        bridge.publications().accept(new Publication(4, plan, Map.of()));
        assign(twoMembers());
        assertEquals(1.0, bridge.assignorMetrics().followedCount());
    }

    @Test
    void anUnknownTaskFallsBack() {
        Map<String, PodTasks> plan = fullPlan();
        plan.put("orders-1", pod(List.of("0_2", "0_3", "1_1", "7_0"), List.of(), List.of()));
        bridge.publications().accept(new Publication(4, plan, Map.of()));
        assertFallsBack(twoMembers(), FallbackReason.UNKNOWN_TASK);
    }

    @Test
    void aMalformedTaskIdFallsBack() {
        Map<String, PodTasks> plan = fullPlan();
        plan.put("orders-1", pod(List.of("0_2", "0_3", "1_1"), List.of("zero-one"), List.of()));
        bridge.publications().accept(new Publication(4, plan, Map.of()));
        assertFallsBack(twoMembers(), FallbackReason.UNKNOWN_TASK);
    }

    @Test
    void aTaskThePlanNamesButRunsNowhereFallsBack() {
        Map<String, PodTasks> plan = fullPlan();
        plan.put("orders-1", pod(List.of("0_2", "1_1"), List.of("0_3"), List.of()));
        bridge.publications().accept(new Publication(4, plan, Map.of()));
        assertFallsBack(twoMembers(), FallbackReason.MISSING_TASK);
    }

    @Test
    void anActiveWithoutAChangelogGoesWhereThePlanMovesIt() {
        // Stores with logging disabled: no copy is ever caught up, and a move loses the state wherever it goes.
        Group group = new Group().tasks(0, 2, true, false).standbys(0)
            .member("orders-0", 1, ids("0_0", "0_1")).member("orders-1", 1, ids());
        bridge.publications().accept(new Publication(3, Map.of(
            "orders-0", pod(List.of("0_0"), List.of(), List.of()),
            "orders-1", pod(List.of("0_1"), List.of(), List.of())), Map.of()));

        TaskAssignment assignment = assign(group);

        assertEquals(Set.of("0_1"), tasksOf(assignment, group.process("orders-1"), AssignedTask.Type.ACTIVE));
        assertEquals(1.0, bridge.assignorMetrics().followedCount());
        assertEquals(0.0, bridge.assignorMetrics().failoverCount());
    }

    @Test
    void tasksNewToTheAppSinceThePlanArePlacedAndTheRestOfThePlanKept() {
        // A subtopology added by an upgrade (2_0, 2_1) and an input partition more (0_4): not in generation 4.
        Group group = group().tasks(2, 2, true).tasks(0, 5, true)
            .member("orders-0", 1, ids("0_0", "0_1", "1_0")).member("orders-1", 1, ids("0_2", "0_3", "1_1"));
        bridge.publications().accept(new Publication(4, fullPlan(), Map.of()));

        TaskAssignment assignment = assign(group);

        Set<String> zero = tasksOf(assignment, group.process("orders-0"), AssignedTask.Type.ACTIVE);
        Set<String> one = tasksOf(assignment, group.process("orders-1"), AssignedTask.Type.ACTIVE);
        assertTrue(zero.containsAll(Set.of("0_0", "0_1", "1_0")) && one.containsAll(Set.of("0_2", "0_3", "1_1")),
            "the plan stands: " + zero + " " + one);
        assertEquals(1.0, bridge.assignorMetrics().failoverCount());
        for (FallbackReason reason : FallbackReason.values()) {
            assertEquals(0.0, bridge.assignorMetrics().fallbackCount(reason), reason.label());
        }
    }

    @Test
    void aRevocationWhoseOwnerLeftLeavesItsTaskMissing() {
        Map<String, PodTasks> plan = fullPlan();
        plan.put("orders-1", pod(List.of("0_2", "1_1"), List.of(), List.of()));
        bridge.publications().accept(new Publication(4, plan, Map.of("0_3", new Revocation("orders-5", 4))));
        assertFallsBack(twoMembers(), FallbackReason.MISSING_TASK);
    }

    @Test
    void aTaskActiveOnTwoPodsFallsBack() {
        Map<String, PodTasks> plan = fullPlan();
        plan.put("orders-1", pod(List.of("0_0", "0_2", "0_3", "1_1"), List.of(), List.of()));
        bridge.publications().accept(new Publication(4, plan, Map.of()));
        assertFallsBack(twoMembers(), FallbackReason.DUPLICATE_ACTIVE);
    }

    @Test
    void aClientWhoseConsumersNameNoPodFallsBack() {
        Group group = group().member("orders-0", 1, ids("0_0", "0_1", "1_0"))
            .member("orders-1", new TreeSet<>(Set.of("some-consumer-1")), ids("0_2", "0_3", "1_1"));
        bridge.publications().accept(new Publication(4, fullPlan(), Map.of()));
        assertFallsBack(group, FallbackReason.UNMAPPED_CLIENT);
    }

    @Test
    void twoClientsNamingOnePodFallBack() {
        Group group = group().member("orders-0", 1, ids("0_0", "0_1", "1_0")).member("orders-0", 1, ids("0_2", "0_3", "1_1"));
        bridge.publications().accept(new Publication(4, fullPlan(), Map.of()));
        assertFallsBack(group, FallbackReason.UNMAPPED_CLIENT);
    }
}
