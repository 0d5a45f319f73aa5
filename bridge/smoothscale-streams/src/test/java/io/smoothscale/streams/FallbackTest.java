package io.smoothscale.streams;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.time.ZoneOffset;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.TreeSet;
import org.apache.kafka.streams.processor.TaskId;
import org.apache.kafka.streams.processor.assignment.KafkaStreamsAssignment;
import org.apache.kafka.streams.processor.assignment.KafkaStreamsAssignment.AssignedTask;
import org.apache.kafka.streams.processor.assignment.ProcessId;
import org.apache.kafka.streams.processor.assignment.TaskAssignor.TaskAssignment;
import org.junit.jupiter.api.Test;

/** The fallback is never worse than Kafka's default (the high-availability assignor) and always finds its way back. */
class FallbackTest {
    private static final Instant NOW = Instant.parse("2026-11-26T10:00:00Z");

    private final SmoothscaleBridge bridge = SmoothscaleBridgeTest.bridgeOf("orders-0");

    private TaskAssignment assign(Group group, Instant now) {
        OperatorTaskAssignor assignor = new OperatorTaskAssignor(Clock.fixed(now, ZoneOffset.UTC));
        assignor.configure(Map.of(SmoothscaleBridge.CONFIG_KEY, bridge));
        TaskAssignment assignment = assignor.assign(group);
        OperatorTaskAssignorTest.assertSafe(group, assignment);
        return assignment;
    }

    private static KafkaStreamsAssignment of(TaskAssignment assignment, ProcessId process) {
        return assignment.assignment().stream().filter(a -> a.processId().equals(process)).findFirst().orElseThrow();
    }

    private static Set<String> tasks(TaskAssignment assignment, ProcessId process, AssignedTask.Type type) {
        Set<String> ids = new TreeSet<>();
        of(assignment, process).tasks().values().stream().filter(t -> t.type() == type)
            .forEach(t -> ids.add(t.id().toString()));
        return ids;
    }

    private static Set<TaskId> ids(String... tasks) {
        Set<TaskId> set = new TreeSet<>();
        for (String task : tasks) {
            set.add(TaskId.parse(task));
        }
        return set;
    }

    private static PodTasks pod(List<String> active, List<String> standby) {
        return new PodTasks(active, standby, List.of());
    }

    /** Six stateful tasks on two caught-up pods, each with a standby on the other; a third pod joins empty. */
    private static Group scaleOut() {
        return new Group().tasks(0, 6, true).standbys(1)
            .member("orders-0", 1, ids("0_0", "0_1", "0_2"))
            .member("orders-1", 1, ids("0_3", "0_4", "0_5"))
            .member("orders-2", 1, ids())
            .lag("orders-0", "0_3", 0).lag("orders-0", "0_4", 0).lag("orders-0", "0_5", 0)
            .lag("orders-1", "0_0", 0).lag("orders-1", "0_1", 0).lag("orders-1", "0_2", 0);
    }

    @Test
    void aScaleOutWithoutAPlanWarmsTheNewPodUpInsteadOfMovingActivesOntoIt() {
        Group group = scaleOut();

        TaskAssignment assignment = assign(group, NOW);

        ProcessId fresh = group.process("orders-2");
        assertEquals(Set.of(), tasks(assignment, fresh, AssignedTask.Type.ACTIVE),
            "Kafka's high-availability assignor runs no active on a pod that would restore it from scratch");
        assertEquals(2, tasks(assignment, fresh, AssignedTask.Type.STANDBY).size(),
            "max.warmup.replicas warmups toward the new pod's share");
        assertEquals(Set.of("0_0", "0_1", "0_2"), tasks(assignment, group.process("orders-0"), AssignedTask.Type.ACTIVE));
        assertEquals(1.0, bridge.assignorMetrics().fallbackCount(FallbackReason.NO_PUBLICATION));
    }

    @Test
    void everyFallbackSchedulesAFollowupRebalance() {
        TaskAssignment assignment = assign(scaleOut(), NOW);

        for (KafkaStreamsAssignment client : assignment.assignment()) {
            assertEquals(Optional.of(NOW.plus(OperatorTaskAssignor.FOLLOWUP_AFTER_FALLBACK)),
                client.followupRebalanceDeadline(), "every member of a fallback comes back for a follow-up");
        }
    }

    @Test
    void aPodThePlanNamesThatHasGoneFailsOverToItsStandbysAndThePlanStandsForTheOthers() {
        Group group = new Group().tasks(0, 6, true).standbys(0)
            .member("orders-0", 1, ids("0_0", "0_1")).member("orders-1", 1, ids("0_2", "0_3"))
            .lag("orders-1", "0_4", 0).lag("orders-1", "0_5", 0);
        bridge.publications().accept(new Publication(9, Map.of(
            "orders-0", pod(List.of("0_1", "0_0"), List.of("0_2")),
            "orders-1", pod(List.of("0_2", "0_3"), List.of("0_4", "0_5")),
            "orders-2", pod(List.of("0_4", "0_5"), List.of())), Map.of()));

        TaskAssignment assignment = assign(group, NOW);

        assertEquals(Set.of("0_0", "0_1"), tasks(assignment, group.process("orders-0"), AssignedTask.Type.ACTIVE));
        assertTrue(tasks(assignment, group.process("orders-0"), AssignedTask.Type.STANDBY).contains("0_2"),
            "the plan's standby on a pod present is kept");
        assertEquals(Set.of("0_2", "0_3", "0_4", "0_5"), tasks(assignment, group.process("orders-1"),
            AssignedTask.Type.ACTIVE), "the gone pod's tasks run where their caught-up standbys are");
        assertEquals(1.0, bridge.assignorMetrics().failoverCount(), "a fail-over, counted as such");
        for (FallbackReason reason : FallbackReason.values()) {
            assertEquals(0.0, bridge.assignorMetrics().fallbackCount(reason), "no fallback: " + reason.label());
        }
        for (KafkaStreamsAssignment client : assignment.assignment()) {
            assertEquals(Optional.of(NOW.plus(OperatorTaskAssignor.FOLLOWUP_AFTER_FALLBACK)),
                client.followupRebalanceDeadline(), "the group comes back for the operator's next plan");
        }
    }

    @Test
    void anExceptionWhileDecidingIsCaughtCountedAndAnswered() {
        Group group = scaleOut().failNextStates(new IllegalStateException("a bug in the bridge"));
        bridge.publications().accept(new Publication(3, Map.of(), Map.of()));

        TaskAssignment assignment = assign(group, NOW);

        assertEquals(3, assignment.assignment().size());
        assertEquals(1.0, bridge.assignorMetrics().fallbackCount(FallbackReason.ASSIGNOR_ERROR));
    }

    @Test
    void aPlanLeavingAMemberIdleIsFollowedUntilItExpires() {
        Group group = scaleOut();
        bridge.publications().accept(new Publication(5, Map.of(
            "orders-0", pod(List.of("0_0", "0_1", "0_2"), List.of("0_3", "0_4", "0_5")),
            "orders-1", pod(List.of("0_3", "0_4", "0_5"), List.of("0_0", "0_1", "0_2"))), Map.of()));

        TaskAssignment waiting = assign(group, NOW);
        TaskAssignment stillWaiting = assign(group, NOW.plus(PlanPatience.LIMIT));
        TaskAssignment expired = assign(group, NOW.plus(PlanPatience.LIMIT).plus(Duration.ofSeconds(1)));

        ProcessId fresh = group.process("orders-2");
        assertEquals(Set.of(), tasks(waiting, fresh, AssignedTask.Type.STANDBY), "waits for the operator's plan");
        assertEquals(Set.of(), tasks(stillWaiting, fresh, AssignedTask.Type.STANDBY));
        assertEquals(2.0, bridge.assignorMetrics().followedCount());
        assertEquals(2, tasks(expired, fresh, AssignedTask.Type.STANDBY).size(),
            "an expired plan is no longer waited on: the idle pod warms up as under Kafka's own assignor");
        assertEquals(1.0, bridge.assignorMetrics().fallbackCount(FallbackReason.PLAN_EXPIRED));
        assertTrue(of(expired, fresh).followupRebalanceDeadline().isPresent());
    }

    @Test
    void aNewGenerationRestartsThePatience() {
        Group group = scaleOut();
        Map<String, PodTasks> plan = Map.of(
            "orders-0", pod(List.of("0_0", "0_1", "0_2"), List.of()),
            "orders-1", pod(List.of("0_3", "0_4", "0_5"), List.of()));
        bridge.publications().accept(new Publication(5, plan, Map.of()));
        assign(group, NOW);
        bridge.publications().accept(new Publication(6, plan, Map.of()));

        assign(group, NOW.plus(PlanPatience.LIMIT).plus(Duration.ofSeconds(1)));

        assertEquals(0.0, bridge.assignorMetrics().fallbackCount(FallbackReason.PLAN_EXPIRED));
    }

    @Test
    void aStandbyOfAStoreWithLoggingDisabledIsNeverAsked() {
        Group group = new Group().tasks(0, 2, true, false).standbys(1)
            .member("orders-0", 1, ids("0_0")).member("orders-1", 1, ids("0_1"));
        bridge.publications().accept(new Publication(2, Map.of(
            "orders-0", pod(List.of("0_0"), List.of("0_1")),
            "orders-1", pod(List.of("0_1"), List.of("0_0"))), Map.of()));

        TaskAssignment followed = assign(group, NOW);
        TaskAssignment fallback = assign(group.failNextStates(new IllegalStateException("boom")), NOW);

        for (TaskAssignment assignment : List.of(followed, fallback)) {
            assertEquals(Set.of(), tasks(assignment, group.process("orders-0"), AssignedTask.Type.STANDBY));
            assertEquals(Set.of(), tasks(assignment, group.process("orders-1"), AssignedTask.Type.STANDBY));
        }
    }
}
