package io.smoothscale.streams;

import io.prometheus.metrics.core.metrics.Counter;
import io.prometheus.metrics.core.metrics.Gauge;
import io.prometheus.metrics.model.registry.PrometheusRegistry;

/** What the assignor did on this instance when it led a rebalance: followed the operator, or fell back. */
public final class AssignorMetrics {
    public static final String FALLBACKS = "smoothscale_bridge_assignor_fallbacks";
    public static final String FOLLOWED = "smoothscale_bridge_assignor_followed";
    public static final String FOLLOWED_GENERATION = "smoothscale_bridge_assignor_followed_generation";
    public static final String FAILOVERS = "smoothscale_bridge_assignor_failovers";

    private final Counter fallbacks;
    private final Counter followed;
    private final Gauge followedGeneration;
    private final Counter failovers;

    AssignorMetrics(PrometheusRegistry registry) {
        fallbacks = Counter.builder().name(FALLBACKS)
            .help("Rebalances this instance led with Kafka's own assignment instead of the operator's, by reason.")
            .labelNames("reason").register(registry);
        followed = Counter.builder().name(FOLLOWED)
            .help("Rebalances this instance led with the operator's published assignment.").register(registry);
        followedGeneration = Gauge.builder().name(FOLLOWED_GENERATION)
            .help("Generation of the publication the last rebalance this instance led returned (-1: none yet).")
            .register(registry);
        followedGeneration.set(-1);
        failovers = Counter.builder().name(FAILOVERS)
            .help("Rebalances this instance led with the operator's plan except for the actives of pods gone from"
                + " the group (or without their state), which ran where their most caught-up copy was.")
            .register(registry);
    }

    void fellBack(FallbackReason reason) {
        fallbacks.labelValues(reason.label()).inc();
    }

    void followed(long generation) {
        followed.inc();
        followedGeneration.set(generation);
    }

    void failedOver() {
        failovers.inc();
    }

    public double failoverCount() {
        return failovers.get();
    }

    public double fallbackCount(FallbackReason reason) {
        return fallbacks.labelValues(reason.label()).get();
    }

    public double followedCount() {
        return followed.get();
    }
}
