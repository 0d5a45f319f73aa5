package io.smoothscale.streams;

import java.util.Map;
import java.util.Optional;
import org.apache.kafka.streams.processor.assignment.ApplicationState;
import org.apache.kafka.streams.processor.assignment.TaskAssignor;
import org.apache.kafka.streams.processor.assignment.assignors.StickyTaskAssignor;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A KIP-924 {@link TaskAssignor} ({@code task.assignor.class}) that returns, on the group leader, the
 * assignment the smoothscale operator published for the app: every pod's actives, and its standbys and
 * warmups as Kafka standbys. Kafka's cooperative protocol then revokes a moved task from its old owner in
 * one rebalance and starts it on the new one in the follow-up, so no task is ever active on two instances.
 *
 * <p>When the publication cannot be followed (none read, corrupt, written for other members, naming unknown
 * tasks, or losing a task: see {@link PublishedPlan}), it returns what Kafka's own KIP-924 assignor,
 * {@link StickyTaskAssignor}, returns, logs why at WARN and counts it in
 * {@code smoothscale_bridge_assignor_fallbacks_total{reason}}. Kafka Streams builds a new assignor for every
 * rebalance and configures it with the app's properties, where {@link SmoothscaleBridge#configure} put the
 * bridge under {@link SmoothscaleBridge#CONFIG_KEY}.
 */
public class OperatorTaskAssignor implements TaskAssignor {
    private static final Logger LOG = LoggerFactory.getLogger(OperatorTaskAssignor.class);

    private SmoothscaleBridge bridge;

    @Override
    public void configure(Map<String, ?> configs) {
        Object configured = configs.get(SmoothscaleBridge.CONFIG_KEY);
        if (configured instanceof SmoothscaleBridge found) {
            bridge = found;
        } else {
            LOG.warn("{} is not a SmoothscaleBridge (got {}): every rebalance will use Kafka's own assignment",
                SmoothscaleBridge.CONFIG_KEY, configured == null ? "nothing" : configured.getClass().getName());
        }
    }

    @Override
    public TaskAssignment assign(ApplicationState state) {
        if (bridge == null) {
            return fallBack(state, FallbackReason.NO_PUBLICATION, "the bridge is not configured", null);
        }
        LatestPublication.Reading reading = bridge.publications().reading();
        Optional<Publication> publication = reading.publication();
        if (publication.isEmpty()) {
            return reading.error().isPresent()
                ? fallBack(state, FallbackReason.CORRUPT_PUBLICATION, reading.error().get(), bridge.assignorMetrics())
                : fallBack(state, FallbackReason.NO_PUBLICATION, "no publication read yet from "
                    + bridge.configMapName(), bridge.assignorMetrics());
        }
        if (publication.get().isNothing()) {
            return fallBack(state, FallbackReason.NO_PUBLICATION, "nothing published yet in "
                + bridge.configMapName(), bridge.assignorMetrics());
        }
        PlanResult plan = PublishedPlan.resolve(publication.get(), state);
        if (!plan.isFollowed()) {
            return fallBack(state, plan.reason(), plan.detail(), bridge.assignorMetrics());
        }
        if (!plan.idlePods().isEmpty()) {
            LOG.info("Generation {} does not name pods {} yet: they get no tasks until the operator plans for them",
                publication.get().generation(), plan.idlePods());
        }
        LOG.info("Assigning generation {} of the operator's plan to {} clients", publication.get().generation(),
            state.kafkaStreamsStates(false).size());
        bridge.assignorMetrics().followed(publication.get().generation());
        return plan.assignment().orElseThrow();
    }

    private static TaskAssignment fallBack(ApplicationState state, FallbackReason reason, String detail,
                                           AssignorMetrics metrics) {
        LOG.warn("Falling back to Kafka's own assignment ({}): {}", reason.label(), detail);
        if (metrics != null) {
            metrics.fellBack(reason);
        }
        return new StickyTaskAssignor().assign(state);
    }
}
