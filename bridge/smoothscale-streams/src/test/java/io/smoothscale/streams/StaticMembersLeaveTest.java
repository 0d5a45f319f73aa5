package io.smoothscale.streams;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.List;
import java.util.Map;
import java.util.Optional;
import org.junit.jupiter.api.Test;

class StaticMembersLeaveTest {
    private static final Map<String, Object> APP = Map.of("application.id", "orders", "bootstrap.servers", "k:9092");

    @Test
    void aStaticInstanceLeavesByTheInstanceIdItsThreadsGet() {
        Map<String, Object> settings = new java.util.HashMap<>(APP);
        settings.put("group.instance.id", "orders-2");
        assertEquals(Optional.of("orders-2"),
            StaticMembersLeave.of(settings, "orders-2").map(StaticMembersLeave::instanceIdBase));
        Map<String, Object> mainConsumer = new java.util.HashMap<>(APP);
        mainConsumer.put("main.consumer.group.instance.id", "orders-2");
        assertEquals(Optional.of("orders-2"),
            StaticMembersLeave.of(mainConsumer, "orders-2").map(StaticMembersLeave::instanceIdBase),
            "set for the main consumers only, as Kafka Streams reads it too");
    }

    @Test
    void dynamicMembersNeedNoLeave() {
        assertTrue(StaticMembersLeave.of(APP, "orders-2").isEmpty(), "a dynamic member leaves on close itself");
    }

    @Test
    void aPodLeavesOnlyWhenTheNewestPublicationGivesItNothing() {
        PodTasks some = new PodTasks(List.of("0_1"), List.of(), List.of());
        PodTasks copies = new PodTasks(List.of(), List.of("0_2"), List.of());
        Publication plan = new Publication(4, Map.of("orders-0", some, "orders-1", copies,
            "orders-2", PodTasks.NONE), Map.of());
        assertTrue(StaticMembersLeave.retiring(Optional.of(plan), "orders-2"), "named with nothing: leaving");
        assertTrue(StaticMembersLeave.retiring(Optional.of(plan), "orders-3"), "not named: retired");
        assertFalse(StaticMembersLeave.retiring(Optional.of(plan), "orders-0"),
            "a pod restarted with its tasks keeps its members for its static rejoin");
        assertFalse(StaticMembersLeave.retiring(Optional.of(plan), "orders-1"), "standbys are tasks too");
        assertFalse(StaticMembersLeave.retiring(Optional.empty(), "orders-2"), "no publication read: unknown");
        assertFalse(StaticMembersLeave.retiring(Optional.of(Publication.NOTHING), "orders-2"),
            "nothing published yet: the operator has planned for no pod");
    }

    @Test
    void onlyThisPodsThreadsAreItsMembers() {
        List<String> group = List.of("orders-1-1", "orders-1-2", "orders-11-1", "orders-1-x", "orders-1", "orders-0-1",
            "orders-1-12");
        assertEquals(List.of("orders-1-1", "orders-1-12", "orders-1-2"), StaticMembersLeave.ownMembers(group, "orders-1"));
    }
}
