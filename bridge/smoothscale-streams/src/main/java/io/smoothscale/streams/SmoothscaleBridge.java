package io.smoothscale.streams;

import io.prometheus.metrics.model.registry.PrometheusRegistry;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.Properties;
import org.apache.kafka.streams.KafkaClientSupplier;
import org.apache.kafka.streams.KafkaStreams;
import org.apache.kafka.streams.StreamsConfig;
import org.apache.kafka.streams.Topology;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Everything a Kafka Streams app needs to run under the smoothscale operator, in three calls:
 *
 * <pre>{@code
 * SmoothscaleBridge bridge = SmoothscaleBridge.fromProperties(props);
 * KafkaStreams streams = new KafkaStreams(topology, bridge.configure(props), bridge.clientSupplier());
 * bridge.start(streams, topology);   // then streams.start(); and bridge.close() after streams.close()
 * }</pre>
 *
 * <p>Its settings ({@link BridgeSettings}) are {@code smoothscale.*} properties of the app, else the environment
 * the operator gives every pod. {@link #configure} adds what the bridge needs and overwrites nothing: a
 * setting of the app that would defeat it is refused at start-up ({@link #refuseConflicts}).
 * {@link #clientSupplier} lets a new publication start a rebalance; {@link #start} watches the assignment
 * ConfigMap and serves the Contract 3 metrics (through the app's Micrometer registry when it serves Prometheus,
 * else on an endpoint of its own: {@link MetricsEndpoint}).
 */
public final class SmoothscaleBridge implements AutoCloseable {
    /** The key under which {@link #configure} passes this bridge to the assignor through the app's config. */
    public static final String CONFIG_KEY = "smoothscale.bridge";
    /** Kafka Streams' {@code group.protocol} (4.1 and later); {@code streams} assigns tasks on the broker. */
    static final String GROUP_PROTOCOL = "group.protocol";
    private static final Logger LOG = LoggerFactory.getLogger(SmoothscaleBridge.class);
    private static final long RETRY_MILLIS = 2_000;
    private static final int MAX_REQUESTS = 5;
    /** Then a rebalance every 30 s while the instance does not run the newest generation: cheap under the
     * cooperative protocol, and the only way back when the leader read the generation late (it was cut off
     * from the API server) after the quick requests were spent. */
    private static final long SLOW_RETRY_MILLIS = 30_000;

    private final BridgeSettings settings;
    private final LatestPublication publications = new LatestPublication();
    private final RebalanceTrigger trigger = new RebalanceTrigger();
    private final PrometheusRegistry registry = new PrometheusRegistry();
    private final AssignorMetrics assignorMetrics = new AssignorMetrics(registry);
    private final PlanPatience planPatience = new PlanPatience();
    private final TopologyReport topologyReport = new TopologyReport(registry);
    private PublicationWatch watch;
    private volatile boolean closed;
    private PublicationFollower follower;
    private MetricsEndpoint metrics;
    private TaskSource tasks;
    private ReportedClient reported;
    /** The app's Streams settings (from {@link #configure} or the reporter's): how a retiring pod's static members
     * leave the group when the bridge closes ({@link StaticMembersLeave}); null before either. */
    private volatile Map<?, ?> streamsSettings;
    /** Takes a retiring pod's static members out of the group as soon as the JVM is told to stop (SIGTERM), in
     * parallel with the app's close ({@link #leaveIfRetiring}). */
    private final Thread leaveOnStop = new Thread(this::leaveIfRetiring, "smoothscale-leave-on-stop");

    /** A bridge with these settings; fails when the Kafka Streams on the classpath is older than 3.8. */
    public SmoothscaleBridge(BridgeSettings settings) {
        KafkaStreamsVersion.requireSupported();
        this.settings = Objects.requireNonNull(settings, "settings");
    }

    /** The bridge of the pod the process runs in, from the environment the operator gives every pod. */
    public static SmoothscaleBridge fromEnvironment() {
        return fromProperties(Map.of());
    }

    /** The bridge the app's {@code smoothscale.*} properties describe (the pod's environment fills the rest). */
    public static SmoothscaleBridge fromProperties(Map<?, ?> app) {
        return new SmoothscaleBridge(BridgeSettings.of(app, System.getenv()));
    }

    /**
     * The app's Streams properties plus what the bridge needs, when the app has not set them:
     * {@code client.id} = the pod's name (how the leader tells pods apart) and {@code task.assignor.class} =
     * {@link OperatorTaskAssignor}, which finds this bridge under {@link #CONFIG_KEY}. Returns a copy; nothing
     * the app set is changed, and a setting that conflicts is refused ({@link #refuseConflicts}).
     */
    public Properties configure(Properties app) {
        refuseConflicts(app, settings.pod());
        Properties props = new Properties();
        props.putAll(app);
        props.putIfAbsent(StreamsConfig.CLIENT_ID_CONFIG, settings.pod());
        props.putIfAbsent(StreamsConfig.TASK_ASSIGNOR_CLASS_CONFIG, OperatorTaskAssignor.class.getName());
        props.put(CONFIG_KEY, this);
        streamsSettings = props;
        return props;
    }

    /**
     * Refuse, before Kafka Streams starts, an app setting under which the pods could not follow the operator:
     * another {@code task.assignor.class}, a {@code client.id} that is not the pod's name, a
     * {@code default.client.supplier} (Kafka would ignore it for the bridge's), or {@code group.protocol=streams}
     * (the broker assigns the tasks and never asks a {@code task.assignor.class}).
     */
    static void refuseConflicts(Map<?, ?> app, String pod) {
        Object assignor = app.get(StreamsConfig.TASK_ASSIGNOR_CLASS_CONFIG);
        String ours = OperatorTaskAssignor.class.getName();
        if (assignor != null && !ours.equals(className(assignor))) {
            throw new IllegalArgumentException(StreamsConfig.TASK_ASSIGNOR_CLASS_CONFIG + " is '" + className(assignor)
                + "' but the pods follow the operator's plan through " + ours + ": remove the setting (the bridge"
                + " sets it) or set it to " + ours);
        }
        Object clientId = app.get(StreamsConfig.CLIENT_ID_CONFIG);
        if (clientId != null && !pod.equals(clientId.toString())) {
            throw new IllegalArgumentException(StreamsConfig.CLIENT_ID_CONFIG + " is '" + clientId + "' but must be the"
                + " pod's name '" + pod + "': the assignor finds each pod's Kafka Streams client by it; remove the"
                + " setting (the bridge sets it)");
        }
        Object supplier = app.get(StreamsConfig.DEFAULT_CLIENT_SUPPLIER_CONFIG);
        if (supplier != null) {
            throw new IllegalArgumentException(StreamsConfig.DEFAULT_CLIENT_SUPPLIER_CONFIG + " is '"
                + className(supplier) + "' but the bridge supplies the Kafka clients (its main consumers start the"
                + " rebalance a new publication needs), and Kafka Streams would ignore yours: remove the setting");
        }
        Object protocol = app.get(GROUP_PROTOCOL);
        if (protocol != null && "streams".equalsIgnoreCase(protocol.toString().strip())) {
            throw new IllegalArgumentException(GROUP_PROTOCOL + "=streams lets the broker assign the tasks (KIP-1071),"
                + " which never asks " + StreamsConfig.TASK_ASSIGNOR_CLASS_CONFIG + ": use " + GROUP_PROTOCOL
                + "=classic with this bridge, or install smoothscale's broker-side assignor"
                + " (group.streams.assignors on the brokers) instead of the bridge's");
        }
    }

    /**
     * What {@link #refuseConflicts} refuses, and what the configuration-only path needs besides: that the app set
     * {@code task.assignor.class} to {@link OperatorTaskAssignor} (else Kafka's own assignor decides, and no
     * publication is ever followed) and {@code client.id} to the pod's name (Kafka Streams would otherwise make
     * one up, and the group leader could not tell which pod a member runs in). A {@code default.client.supplier}
     * is the app's own business on this path: the bridge asks for rebalances through the stream threads.
     */
    static void refuseConfigurationConflicts(Map<?, ?> app, String pod) {
        Object clientId = app.get(StreamsConfig.CLIENT_ID_CONFIG);
        if (clientId == null || !pod.equals(clientId.toString())) {
            throw new IllegalArgumentException(StreamsConfig.CLIENT_ID_CONFIG + " is '" + clientId + "' but must be the"
                + " pod's name '" + pod + "': the group leader finds each pod's Kafka Streams client by it; set "
                + StreamsConfig.CLIENT_ID_CONFIG + " from the environment variable the operator gives every pod ("
                + BridgeSettings.envName(BridgeSettings.POD) + "): ${" + BridgeSettings.envName(BridgeSettings.POD)
                + "} in Spring Boot or Quarkus, ${env:" + BridgeSettings.envName(BridgeSettings.POD) + "} with Kafka's"
                + " EnvVarConfigProvider (config.providers) elsewhere");
        }
        Map<Object, Object> rest = new java.util.HashMap<>(app);
        rest.remove(StreamsConfig.DEFAULT_CLIENT_SUPPLIER_CONFIG);
        rest.remove(StreamsConfig.CLIENT_ID_CONFIG);
        refuseConflicts(rest, pod);
        String ours = OperatorTaskAssignor.class.getName();
        if (app.get(StreamsConfig.TASK_ASSIGNOR_CLASS_CONFIG) == null) {
            throw new IllegalArgumentException(StreamsConfig.TASK_ASSIGNOR_CLASS_CONFIG + " is not set, but "
                + SmoothscaleMetricsReporter.class.getName() + " is in metric.reporters: set "
                + StreamsConfig.TASK_ASSIGNOR_CLASS_CONFIG + "=" + ours + " so that the pods follow the operator's plan");
        }
    }

    private static String className(Object value) {
        return value instanceof Class<?> type ? type.getName() : value.toString().strip();
    }

    /** Kafka's usual clients, with main consumers that can start a rebalance for a new publication. */
    public KafkaClientSupplier clientSupplier() {
        return new RebalancingClientSupplier(trigger);
    }

    /** Watch the assignment ConfigMap, follow it, and serve the metrics; call before {@code streams.start()}. */
    public void start(KafkaStreams streams, Topology topology) {
        start(new KafkaStreamsTasks(streams, new TaskStates(topology.describe())));
    }

    /**
     * The configuration-only path: the bridge of the Kafka Streams client whose registry
     * {@link SmoothscaleMetricsReporter} reports, started from the app's Streams settings {@code configs} once the
     * settings pass {@link #refuseConfigurationConflicts}; it reads what the pod runs from the reported metrics and
     * asks for rebalances through the stream threads' follow-up schedules.
     */
    static SmoothscaleBridge startReported(ReportedClient client, Map<String, ?> configs) {
        SmoothscaleBridge bridge = fromProperties(configs);
        refuseConfigurationConflicts(configs, bridge.pod());
        client.attach(bridge);
        bridge.reported = client;
        bridge.streamsSettings = configs;
        bridge.trigger.onRequest(reason -> {
            if (!client.rebalanceNow()) {
                LOG.warn("Cannot ask for a rebalance ({}): no stream thread reported its schedule", reason);
            }
        });
        try {
            bridge.start(new ReportedTaskSource(client, configs));
        } catch (RuntimeException error) {
            bridge.close();
            throw error;
        }
        return bridge;
    }

    synchronized void start(TaskSource source) {
        tasks = source;
        daemon("smoothscale-rocksdb-warmup", RocksDbWarmup::run);
        follower = new PublicationFollower(settings.pod(), publications, trigger, source::running,
            source::statefulSubtopologies, RETRY_MILLIS, MAX_REQUESTS, SLOW_RETRY_MILLIS);
        new ContractMetrics(source, follower::runningGeneration, registry);
        io.prometheus.metrics.core.metrics.GaugeWithCallback.builder()
            .name("smoothscale_bridge_publication_apply_seconds")
            .help("Seconds from reading the generation this pod runs to running it.")
            .callback(callback -> {
                double seconds = follower.lastApplySeconds();
                if (!Double.isNaN(seconds)) {
                    callback.call(seconds);
                }
            })
            .register(registry);
        io.prometheus.metrics.core.metrics.GaugeWithCallback.builder()
            .name("smoothscale_bridge_publication_read_generation")
            .help("Newest generation this pod has read from its assignment ConfigMap (absent: none valid).")
            .callback(callback -> publications.publication().ifPresent(p -> callback.call(p.generation())))
            .register(registry);
        metrics = MetricsEndpoint.start(settings, registry);
        Runtime.getRuntime().addShutdownHook(leaveOnStop);
        // The watch runs in a thread of its own, opening the API's access there (retried until it opens): the Kafka
        // Streams client joins its group meanwhile (a leader without a publication falls back to Kafka's
        // assignment; the pod reports a generation once it follows one).
        watch = new PublicationWatch(this::kubernetesAccess, settings.namespace(), settings.configMap(), publications);
        follower.start();
        LOG.info("smoothscale bridge for pod {} follows ConfigMap {}; metrics on {}", settings.pod(),
            configMapName(), metrics.describe());
    }

    private static void daemon(String name, Runnable task) {
        Thread thread = new Thread(task, name);
        thread.setDaemon(true);
        thread.start();
    }

    /** The pod's way to the API server: the kubeconfig the settings name, else the pod's service account. */
    private KubernetesAccess kubernetesAccess() {
        return settings.kubeconfig().map(KubernetesAccess::fromKubeconfig)
            .orElseGet(() -> KubernetesAccess.inCluster(System.getenv(), KubernetesAccess.SERVICE_ACCOUNT));
    }

    public LatestPublication publications() {
        return publications;
    }

    public AssignorMetrics assignorMetrics() {
        return assignorMetrics;
    }

    public BridgeSettings settings() {
        return settings;
    }

    /** The topology this pod saw when it last led a rebalance, served on its metrics endpoint. */
    public TopologyReport topologyReport() {
        return topologyReport;
    }

    /** How long the leader has waited for the operator to plan for idle members (kept across rebalances). */
    PlanPatience planPatience() {
        return planPatience;
    }

    PrometheusRegistry registry() {
        return registry;
    }

    public String pod() {
        return settings.pod();
    }

    public String configMapName() {
        return settings.namespace() + "/" + settings.configMap();
    }

    /** The port the bridge's own metrics endpoint listens on (after {@link #start}); -1 when the app's
     * Micrometer registry serves the metrics. */
    public int metricsPort() {
        return metrics.port();
    }

    /** The generation this instance runs (-1 until it runs one). */
    public long runningGeneration() {
        return follower == null ? -1 : follower.runningGeneration();
    }

    /**
     * Stop following the publications and serving the metrics; call after {@code streams.close()} (the
     * configuration-only path closes it with {@code KafkaStreams}). A pod the newest publication gives no task is
     * retiring: its static members, if any, are taken out of the group then ({@link StaticMembersLeave}).
     */
    @Override
    public synchronized void close() {
        boolean retiring = !closed && streamsSettings != null
            && StaticMembersLeave.retiring(publications.publication(), settings.pod());
        closed = true;
        if (follower != null) {
            follower.close();
        }
        if (watch != null) {
            watch.close();
        }
        if (metrics != null) {
            metrics.close();
        }
        if (tasks != null) {
            tasks.close();
        }
        if (reported != null) {
            reported.detach(this);
        }
        if (retiring) {
            leaveGroup();
        }
        try {
            Runtime.getRuntime().removeShutdownHook(leaveOnStop);
        } catch (IllegalStateException stopping) {
            // closed by the app's own shutdown hook: ours runs (or ran) too
        }
    }

    /**
     * On SIGTERM, a retiring pod's static members leave the group at once, not only once the app's close has
     * finished ({@link #close}): a stream thread that sent a JoinGroup before it began to close waits for the
     * response as it closes its consumer (up to the consumer's close timeout, 30 s), and that rebalance waits
     * for the pod's other members, which no longer take part, until their sessions expire (45 s). A swap of
     * every pod showed it: two retired pods' closes ran into the app's 30 s close timeout, the JVMs exited
     * before the bridge closed, and a moved task went 90 s unprocessed. The retiring pod holds no task then
     * (the operator deletes it only once Kafka has revoked them); the removal at close still runs, for a
     * thread that rejoined meanwhile.
     */
    private void leaveIfRetiring() {
        if (closed || streamsSettings == null) {
            return;
        }
        Optional<Publication> newest = publications.publication();
        if (StaticMembersLeave.retiring(newest, settings.pod())) {
            LOG.info("Pod {} is stopping and the plan gives it no task: its static members leave the group now",
                settings.pod());
            leaveGroup();
        } else {
            LOG.info("Pod {} is stopping and the plan ({}) gives it tasks: its static members, if any, stay in the"
                + " group for its return", settings.pod(),
                newest.map(p -> "generation " + p.generation()).orElse("none read yet"));
        }
    }

    private void leaveGroup() {
        try {
            StaticMembersLeave.of(streamsSettings, settings.pod()).ifPresent(StaticMembersLeave::leave);
        } catch (RuntimeException error) {
            LOG.warn("Cannot take this retiring pod's static members out of the group: they stay until their"
                + " sessions expire", error);
        }
    }
}
