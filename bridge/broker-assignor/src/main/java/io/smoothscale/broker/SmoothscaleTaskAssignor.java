package io.smoothscale.broker;

import java.util.function.Consumer;
import org.apache.kafka.coordinator.group.api.streams.assignor.GroupAssignment;
import org.apache.kafka.coordinator.group.api.streams.assignor.GroupSpec;
import org.apache.kafka.coordinator.group.api.streams.assignor.TaskAssignor;
import org.apache.kafka.coordinator.group.api.streams.assignor.TaskAssignorException;
import org.apache.kafka.coordinator.group.api.streams.assignor.TopologyDescriber;
import org.apache.kafka.coordinator.group.streams.assignor.StickyTaskAssignor;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The broker-side streams assignor (KIP-1357) named {@code smoothscale}: for a group whose app the smoothscale
 * operator runs, the operator's latest plan; for any other group, or while no valid plan is at hand, exactly
 * what Kafka's built-in sticky assignor returns, with the reason in the broker's log and in the metric
 * {@code smoothscale:type=broker-assignor,name=fallbacks-total,reason=...}.
 *
 * <p>Install: the shaded jar in the broker's {@code libs/}, {@code group.streams.assignors=sticky,}
 * {@code io.smoothscale.broker.SmoothscaleTaskAssignor} on every broker, the plan topic's address as a system
 * property ({@link PluginSettings}); an app opts in with the group config
 * {@code streams.assignor.name=smoothscale} and the client tags {@code smoothscale.app} and
 * {@code smoothscale.pod}.
 *
 * <p>Safe on the coordinator's threads: {@link #assign} reads plans from memory (a background thread reads the
 * topic), takes time linear in members and tasks, shares no mutable state but atomic counters and a concurrent
 * map, and lets no exception of its own escape; only Kafka's own assignor's {@link TaskAssignorException}
 * does, as it would with the built-in assignor.
 */
public final class SmoothscaleTaskAssignor implements TaskAssignor {
    public static final String NAME = "smoothscale";
    private static final Logger LOG = LoggerFactory.getLogger(SmoothscaleTaskAssignor.class);

    private final PlanSource plans;
    private final TaskAssignor fallback;
    private final AssignorMetrics metrics;
    private final Consumer<String> assigned;

    /** What the broker calls (Kafka 4.4 instantiates assignors by class name): settings from the JVM. */
    public SmoothscaleTaskAssignor() {
        this(SharedReader.INSTANCE.source, new StickyTaskAssignor(), SharedReader.INSTANCE.metrics,
            SharedReader.INSTANCE.views);
    }

    SmoothscaleTaskAssignor(PlanSource plans, TaskAssignor fallback, AssignorMetrics metrics) {
        this(plans, fallback, metrics, app -> { });
    }

    /** {@code assigned}: told the app of every tagged group assigned here (the group view publisher). */
    SmoothscaleTaskAssignor(PlanSource plans, TaskAssignor fallback, AssignorMetrics metrics, Consumer<String> assigned) {
        this.plans = plans;
        this.fallback = fallback;
        this.metrics = metrics;
        this.assigned = assigned;
    }

    @Override
    public String name() {
        return NAME;
    }

    @Override
    public GroupAssignment assign(GroupSpec groupSpec, TopologyDescriber topologyDescriber)
        throws TaskAssignorException {
        long started = System.nanoTime();
        Decision decision;
        try {
            decision = PlanFollower.decide(groupSpec, topologyDescriber, plans);
        } catch (RuntimeException | LinkageError | StackOverflowError error) {
            LOG.error("smoothscale assignor: following the plan failed; falling back", error);
            decision = Decision.fallBack(null, FallbackReason.ERROR, error.toString());
        }
        if (decision.app() != null) {
            assigned.accept(decision.app());
        }
        if (decision.followed()) {
            metrics.followed(decision.generation());
            LOG.info("smoothscale assignor: app {} follows plan generation {} ({} members, {} us): {}",
                decision.app(), decision.generation(), groupSpec.memberIds().size(),
                (System.nanoTime() - started) / 1000, decision.assignment().members());
            return decision.assignment();
        }
        metrics.fellBack(decision.reason());
        if (decision.reason() == FallbackReason.NOT_MANAGED) {
            LOG.info("smoothscale assignor: falling back to Kafka's sticky assignment ({}): {}",
                decision.reason().label(), decision.detail());
        } else {
            LOG.warn("smoothscale assignor: app {} falls back to Kafka's sticky assignment ({}): {}",
                decision.app(), decision.reason().label(), decision.detail());
        }
        try {
            return fallback.assign(groupSpec, topologyDescriber);
        } catch (TaskAssignorException error) {
            throw error;
        } catch (RuntimeException error) {
            throw new TaskAssignorException("Kafka's sticky assignor failed: " + error, error);
        }
    }

    /** One plan reader and one set of metrics per broker JVM, however many times Kafka creates the assignor. */
    private enum SharedReader {
        INSTANCE;

        final PlanSource source;
        final AssignorMetrics metrics = new AssignorMetrics(true);
        final Consumer<String> views;

        SharedReader() {
            PlanSource chosen;
            Consumer<String> publisher = app -> { };
            try {
                PluginSettings settings = PluginSettings.fromEnvironment();
                if (settings.bootstrapServers() == null) {
                    LOG.error("smoothscale assignor: smoothscale.plans.bootstrap.servers is not set (system property "
                        + "or SMOOTHSCALE_PLANS_BOOTSTRAP_SERVERS): every group falls back to Kafka's sticky assignor");
                    chosen = app -> PlanLookup.none(FallbackReason.NO_PLAN,
                        "the plugin is not configured: set smoothscale.plans.bootstrap.servers on the broker");
                } else {
                    LOG.info("smoothscale assignor: reading plans with {}", settings.describe());
                    chosen = new PlanTopicReader(settings).start();
                    publisher = new GroupViewPublisher(settings).start()::assigned;
                }
            } catch (RuntimeException error) {
                LOG.error("smoothscale assignor: invalid settings; every group falls back", error);
                String detail = "invalid plugin settings: " + error.getMessage();
                chosen = app -> PlanLookup.none(FallbackReason.NO_PLAN, detail);
            }
            source = chosen;
            views = publisher;
        }
    }
}
