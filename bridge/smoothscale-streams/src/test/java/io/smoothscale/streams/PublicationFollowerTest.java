package io.smoothscale.streams;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.atomic.AtomicLong;
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
    void keepsAskingSlowlyAfterItsQuickRequestsUntilItRunsTheGeneration() {
        LatestPublication latest = new LatestPublication();
        latest.accept(GENERATION_3);
        RebalanceTrigger trigger = new RebalanceTrigger();
        AtomicReference<RunningTasks> running = new AtomicReference<>(new RunningTasks(Set.of(), Set.of()));
        AtomicLong clock = new AtomicLong();
        PublicationFollower follower = new PublicationFollower("orders-0", latest, trigger,
            () -> Optional.of(running.get()), () -> Set.of(0), 1, 2, 50, clock::get);

        int requests = requestsWithin(follower, trigger, clock, 600);
        assertEquals(2 + 11, requests, "2 quick requests (1 ms apart), then one every 50 ms, not at every check");

        running.set(new RunningTasks(Set.of("0_0"), Set.of()));
        follower.check();
        assertEquals(3, follower.runningGeneration());
        trigger.take();
        assertEquals(0, requestsWithin(follower, trigger, clock, 150), "running the generation, it asks no more");
        assertNull(trigger.take());
    }

    /** Checks every 2 ms of the follower's clock for `millis`, counting the rebalance requests. */
    private static int requestsWithin(PublicationFollower follower, RebalanceTrigger trigger, AtomicLong clock,
                                      long millis) {
        int requests = 0;
        for (long elapsed = 0; elapsed < millis; elapsed += 2) {
            follower.check();
            if (trigger.take() != null) {
                requests++;
            }
            clock.addAndGet(2_000_000);
        }
        return requests;
    }
}
