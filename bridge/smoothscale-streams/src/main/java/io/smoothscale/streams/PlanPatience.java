package io.smoothscale.streams;

import java.time.Duration;
import java.time.Instant;

/**
 * How long the leader keeps following a publication that leaves members of the group without work, waiting
 * for the operator to plan for them. Past {@link #LIMIT} the plan has expired: the operator is down or cut off
 * from the pods, and the leader assigns as Kafka's high-availability assignor would, until a new generation.
 *
 * <p>Why two minutes: the operator reconciles every scrape interval (5 s by default) and plans for a new pod
 * as soon as it reports metrics, waiting at most its startup grace (30 s by default) for them; a plan that has
 * not caught up with the group four times that long will not. It is also well under Kafka's probing interval
 * (10 minutes by default), the longest Kafka's own assignor leaves a member without its share. The clock is
 * this pod's: it starts at the first rebalance this pod leads that finds idle members under the generation
 * (a new leader starts it again, which only delays the expiry), and a new generation stops it.
 */
final class PlanPatience {
    /** How long a generation may leave members of the group idle before the leader stops waiting. */
    static final Duration LIMIT = Duration.ofMinutes(2);

    private long generation = -1;
    private Instant idleSince = Instant.MIN;

    /** Whether the generation has left members idle for longer than {@link #LIMIT} as of {@code now}. */
    synchronized boolean expired(long publishedGeneration, Instant now) {
        if (publishedGeneration != generation) {
            generation = publishedGeneration;
            idleSince = now;
        }
        return Duration.between(idleSince, now).compareTo(LIMIT) > 0;
    }

    /** The generation names every member: the clock stops. */
    synchronized void satisfied() {
        generation = -1;
    }
}
