package io.smoothscale.streams;

import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import org.apache.kafka.streams.StreamsConfig;
import org.apache.kafka.streams.processor.assignment.ApplicationState;
import org.apache.kafka.streams.processor.assignment.KafkaStreamsAssignment;
import org.apache.kafka.streams.processor.assignment.KafkaStreamsAssignment.AssignedTask;
import org.apache.kafka.streams.processor.assignment.ProcessId;
import org.apache.kafka.streams.processor.assignment.TaskAssignmentUtils;
import org.apache.kafka.streams.processor.assignment.TaskAssignor;
import org.apache.kafka.streams.processor.assignment.TaskAssignor.AssignmentError;
import org.apache.kafka.streams.processor.assignment.assignors.StickyTaskAssignor;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A KIP-924 {@link TaskAssignor} ({@code task.assignor.class}) that returns, on the group leader, the
 * assignment the smoothscale operator published for the app: every pod's actives, and its standbys and
 * warmups as Kafka standbys. Kafka's cooperative protocol then revokes a moved task from its old owner in
 * one rebalance and starts it on the new one in the follow-up, so no task is ever active on two instances.
 *
 * <p>When the publication cannot be followed as it is (none read, corrupt, written for other members, naming
 * unknown tasks, losing a task: see {@link PublishedPlan}), it is never worse than Kafka's default: it keeps
 * the plan for the members present, places the rest as Kafka's high-availability assignor would
 * ({@link HighAvailabilityPlacement}: caught-up copies first, warmups instead of cold moves), schedules a
 * follow-up rebalance (so the group comes back to the plan without waiting for a member to ask), logs why at
 * WARN and counts each reason in {@code smoothscale_bridge_assignor_fallbacks_total{reason}}. A generation that
 * leaves members idle for longer than {@link PlanPatience#LIMIT} is no longer waited on. Any exception is
 * caught: an assignor that throws kills the leader's stream thread. Kafka Streams builds a new assignor for
 * every rebalance and configures it with the app's properties, where {@link SmoothscaleBridge#configure} put
 * the bridge under {@link SmoothscaleBridge#CONFIG_KEY}; an app configured alone has its bridge started by
 * {@link SmoothscaleMetricsReporter}, found by the Streams {@code client.id} its consumer's id begins with.
 */
public class OperatorTaskAssignor implements TaskAssignor {
    /**
     * The follow-up rebalance after a fallback, unless the app's {@code probing.rebalance.interval.ms} is
     * shorter: by then the operator has usually published for the new group (it reconciles every 5 s), and a
     * rebalance a minute while the plan cannot be followed is cheap under the cooperative protocol.
     */
    static final Duration FOLLOWUP_AFTER_FALLBACK = Duration.ofMinutes(1);
    private static final Logger LOG = LoggerFactory.getLogger(OperatorTaskAssignor.class);

    private final Clock clock;
    private SmoothscaleBridge bridge;

    public OperatorTaskAssignor() {
        this(Clock.systemUTC());
    }

    OperatorTaskAssignor(Clock clock) {
        this.clock = clock;
    }

    @Override
    public void configure(Map<String, ?> configs) {
        Optional<SmoothscaleBridge> found = bridgeFor(configs);
        if (found.isPresent()) {
            bridge = found.get();
        } else {
            Object configured = configs.get(SmoothscaleBridge.CONFIG_KEY);
            LOG.warn("No smoothscale bridge runs for this Kafka Streams client ({} is {}, and {} lacks {}): every"
                + " rebalance will use Kafka's own assignment", SmoothscaleBridge.CONFIG_KEY,
                configured == null ? "not set" : configured.getClass().getName(),
                StreamsConfig.METRIC_REPORTER_CLASSES_CONFIG, SmoothscaleMetricsReporter.class.getName());
        }
    }

    /**
     * The bridge of the Kafka Streams client the assignor works for: the one the app's code put in its settings,
     * else the one {@link SmoothscaleMetricsReporter} started for the Streams client its consumer belongs to.
     */
    static Optional<SmoothscaleBridge> bridgeFor(Map<String, ?> configs) {
        if (configs.get(SmoothscaleBridge.CONFIG_KEY) instanceof SmoothscaleBridge configured) {
            return Optional.of(configured);
        }
        Object consumer = configs.get(StreamsConfig.CLIENT_ID_CONFIG);
        return consumer == null ? Optional.empty()
            : ReportedClient.clientOfConsumer(consumer.toString()).flatMap(ReportedClient::bridgeOf);
    }

    @Override
    public TaskAssignment assign(ApplicationState state) {
        try {
            return decide(state);
        } catch (RuntimeException | LinkageError | AssertionError | StackOverflowError error) {
            LOG.error("The smoothscale assignor failed; falling back to Kafka's own assignment", error);
            count(List.of(new PlanResult.Problem(FallbackReason.ASSIGNOR_ERROR, error.toString())));
            try {
                return placeRest(state, Map.of());
            } catch (RuntimeException again) {
                LOG.error("Kafka's high-availability placement failed too; using its sticky assignor", again);
                return new StickyTaskAssignor().assign(state);
            }
        }
    }

    private TaskAssignment decide(ApplicationState state) {
        if (bridge == null) {
            return fallBack(state, Map.of(), problem(FallbackReason.NO_PUBLICATION, "the bridge is not configured"));
        }
        bridge.topologyReport().learn(state.allTasks());
        LatestPublication.Reading reading = bridge.publications().reading();
        Optional<Publication> publication = reading.publication();
        if (publication.isEmpty()) {
            return reading.error().isPresent()
                ? fallBack(state, Map.of(), problem(FallbackReason.CORRUPT_PUBLICATION, reading.error().get()))
                : fallBack(state, Map.of(), problem(FallbackReason.NO_PUBLICATION, "no publication read yet from "
                    + bridge.configMapName()));
        }
        long generation = publication.get().generation();
        if (publication.get().isNothing()) {
            return fallBack(state, Map.of(), problem(FallbackReason.NO_PUBLICATION, "nothing published yet in "
                + bridge.configMapName()));
        }
        PlanResult plan = PublishedPlan.resolve(publication.get(), state);
        if (!plan.isFollowed()) {
            return fallBack(state, plan.kept(), plan.problems());
        }
        if (plan.idlePods().isEmpty()) {
            bridge.planPatience().satisfied();
        } else if (bridge.planPatience().expired(generation, clock.instant())) {
            return fallBack(state, Map.of(), problem(FallbackReason.PLAN_EXPIRED, "generation " + generation
                + " has left pods " + plan.idlePods() + " without work for over " + PlanPatience.LIMIT.toSeconds()
                + " s: the operator is not planning for them"));
        } else {
            LOG.info("Generation {} does not name pods {} yet: they get no tasks until the operator plans for them",
                generation, plan.idlePods());
        }
        if (plan.needsPlacement()) {
            return failOver(state, generation, plan);
        }
        LOG.info("Assigning generation {} of the operator's plan to {} clients", generation,
            state.kafkaStreamsStates(false).size());
        bridge.assignorMetrics().followed(generation);
        return plan.assignment();
    }

    /**
     * The plan for the members present, and the actives it gives pods that are gone (or that lost their state)
     * run where their most caught-up copy is: the plan's standby, or the member that ran them, as the operator
     * would decide once it sees the pod gone. Not a fallback (the plan anticipated this loss with its standbys), but logged, counted and
     * followed up like one, so the group takes the operator's next plan without waiting for a member to ask.
     */
    private TaskAssignment failOver(ApplicationState state, long generation, PlanResult plan) {
        if (!plan.failover().isEmpty()) {
            LOG.warn("Generation {} of the operator's plan gives actives to pods that are not in the group, or not"
                + " caught up on them while the member that ran them is ({}): they run where their most caught-up"
                + " copy is, the rest of the plan as published", generation, plan.failover());
        }
        if (!plan.unplanned().isEmpty()) {
            LOG.warn("Tasks {} are new to the app since generation {} of the operator's plan (a topology change):"
                + " placed where their state is until the operator plans with the topology this leader reports",
                plan.unplanned(), generation);
        }
        bridge.assignorMetrics().failedOver();
        return placeRest(state, plan.kept());
    }

    private static List<PlanResult.Problem> problem(FallbackReason reason, String detail) {
        return List.of(new PlanResult.Problem(reason, detail));
    }

    private TaskAssignment fallBack(ApplicationState state, Map<ProcessId, Set<AssignedTask>> kept,
                                    List<PlanResult.Problem> problems) {
        for (PlanResult.Problem problem : problems) {
            LOG.warn("Not following the operator's plan as published ({}): {}", problem.reason().label(),
                problem.detail());
        }
        count(problems);
        return placeRest(state, kept);
    }

    private void count(List<PlanResult.Problem> problems) {
        if (bridge == null) {
            return;
        }
        Set<FallbackReason> reasons = new LinkedHashSet<>();
        problems.forEach(problem -> reasons.add(problem.reason()));
        reasons.forEach(bridge.assignorMetrics()::fellBack);
    }

    /**
     * {@code kept} as it is, the rest placed as Kafka's high-availability assignor would, a follow-up scheduled;
     * checked by Kafka's own validation (an invalid placement throws, and {@link #assign} answers with Kafka's
     * sticky assignor).
     */
    private TaskAssignment placeRest(ApplicationState state, Map<ProcessId, Set<AssignedTask>> kept) {
        HighAvailabilityPlacement.Placement placement =
            HighAvailabilityPlacement.complete(state, CatchUp.of(state), kept);
        long probingMs = state.assignmentConfigs().probingRebalanceIntervalMs();
        Instant followup = clock.instant().plus(
            Duration.ofMillis(Math.min(probingMs, FOLLOWUP_AFTER_FALLBACK.toMillis())));
        LOG.info("Placed what the plan does not with {} warmups; follow-up rebalance at {}", placement.warmups(),
            followup);
        List<KafkaStreamsAssignment> assignments = new ArrayList<>();
        placement.assignment().forEach((process, tasks) ->
            assignments.add(KafkaStreamsAssignment.of(process, tasks).withFollowupRebalance(followup)));
        TaskAssignment assignment = new TaskAssignment(assignments);
        AssignmentError error = TaskAssignmentUtils.validateTaskAssignment(state, assignment);
        if (error != AssignmentError.NONE) {
            throw new IllegalStateException("the placement around the plan is invalid: " + error);
        }
        return assignment;
    }
}
