package io.smoothscale.streams;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.Test;

/**
 * When an instance asks for a rebalance to get onto the newest generation. Found by the chaos benchmark: a
 * leader cut off from the API server while a pod joined kept assigning the old generation; the other pods
 * spent their few quick requests while it could not read the new one, and nothing asked again once it
 * could, so the group stayed on the old generation for good.
 */
class PublicationFollowerTest {
    private static final Publication GENERATION_3 = new Publication(3,
        Map.of("orders-0", new PodTasks(List.of("0_0"), List.of(), List.of())), Map.of());

    @Test
    void keepsAskingSlowlyAfterItsQuickRequestsUntilItRunsTheGeneration() throws InterruptedException {
        LatestPublication latest = new LatestPublication();
        latest.accept(GENERATION_3);
        RebalanceTrigger trigger = new RebalanceTrigger();
        AtomicReference<RunningTasks> running = new AtomicReference<>(new RunningTasks(Set.of(), Set.of()));
        PublicationFollower follower = new PublicationFollower("orders-0", latest, trigger,
            () -> Optional.of(running.get()), Set.of(0), 1, 2, 50);

        int requests = requestsWithin(follower, trigger, 600);
        assertTrue(requests >= 2 + 5, "2 quick requests, then one every 50 ms: " + requests);
        assertTrue(requests <= 2 + 13, "slowly after the quick ones, not at every check: " + requests);

        running.set(new RunningTasks(Set.of("0_0"), Set.of()));
        follower.check();
        assertEquals(3, follower.runningGeneration());
        trigger.take();
        assertEquals(0, requestsWithin(follower, trigger, 150), "running the generation, it asks no more");
        assertNull(trigger.take());
    }

    private static int requestsWithin(PublicationFollower follower, RebalanceTrigger trigger, long millis)
        throws InterruptedException {
        int requests = 0;
        long end = System.nanoTime() + millis * 1_000_000;
        while (System.nanoTime() < end) {
            follower.check();
            if (trigger.take() != null) {
                requests++;
            }
            Thread.sleep(2);
        }
        return requests;
    }
}
