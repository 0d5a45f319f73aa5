package io.smoothscale.streams;

import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.List;
import java.util.Map;
import java.util.Set;
import org.junit.jupiter.api.Test;

/** When an instance counts as running a generation (what its smoothscale_assignment_generation reports). */
class RunningTasksTest {
    private static final Set<Integer> STATEFUL = Set.of(0);  // subtopology 1 is stateless

    private static final Publication PUBLICATION = new Publication(4, Map.of(
        "orders-0", new PodTasks(List.of("0_0", "1_0"), List.of("0_1", "1_1"), List.of("0_2")),
        "orders-1", new PodTasks(List.of("0_1", "0_2", "1_1"), List.of(), List.of())),
        Map.of("0_3", new Revocation("orders-0", 4)));

    @Test
    void runsTheGenerationWhenKafkasTasksAreThePublishedOnes() {
        // 0_3 is still the old owner's (under revocation, named for nobody); 1_1's standby is stateless.
        assertTrue(new RunningTasks(Set.of("0_0", "1_0", "0_3"), Set.of("0_1", "0_2"))
            .follow(PUBLICATION, "orders-0", STATEFUL));
        assertTrue(new RunningTasks(Set.of("0_1", "0_2", "1_1"), Set.of()).follow(PUBLICATION, "orders-1", STATEFUL));
        assertTrue(new RunningTasks(Set.of(), Set.of()).follow(PUBLICATION, "orders-7", STATEFUL));
    }

    @Test
    void aMissingOrExtraTaskIsNotTheGeneration() {
        assertFalse(new RunningTasks(Set.of("0_0", "1_0"), Set.of("0_1", "0_2")).follow(PUBLICATION, "orders-0", STATEFUL));
        assertFalse(new RunningTasks(Set.of("0_0", "1_0", "0_3"), Set.of("0_1")).follow(PUBLICATION, "orders-0", STATEFUL));
        assertFalse(new RunningTasks(Set.of("0_1", "0_2", "1_1", "0_0"), Set.of()).follow(PUBLICATION, "orders-1", STATEFUL));
        assertFalse(new RunningTasks(Set.of("0_1", "0_2"), Set.of("1_1")).follow(PUBLICATION, "orders-1", STATEFUL));
    }
}
