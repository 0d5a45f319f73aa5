package io.smoothscale.streams;

import io.fabric8.kubernetes.client.Config;
import io.fabric8.kubernetes.client.KubernetesClient;
import io.fabric8.kubernetes.client.KubernetesClientBuilder;
import io.prometheus.metrics.exporter.httpserver.HTTPServer;
import io.prometheus.metrics.model.registry.PrometheusRegistry;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Map;
import java.util.Objects;
import java.util.Properties;
import java.util.stream.Stream;
import org.apache.kafka.clients.CommonClientConfigs;
import org.apache.kafka.clients.consumer.ConsumerConfig;
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
 * SmoothscaleBridge bridge = SmoothscaleBridge.fromEnvironment();
 * KafkaStreams streams = new KafkaStreams(topology, bridge.configure(props), bridge.clientSupplier());
 * bridge.start(streams, topology);   // then streams.start(); and bridge.close() after streams.close()
 * }</pre>
 *
 * {@link #configure} names the Kafka Streams client after the pod ({@code client.id}), installs
 * {@link OperatorTaskAssignor} and hands it this bridge; {@link #clientSupplier} lets a new publication start
 * a rebalance; {@link #start} watches the assignment ConfigMap and serves the Contract 3 metrics.
 */
public final class SmoothscaleBridge implements AutoCloseable {
    /** The key under which {@link #configure} passes this bridge to the assignor through the app's config. */
    public static final String CONFIG_KEY = "smoothscale.bridge";
    public static final String POD_NAME_ENV = "SMOOTHSCALE_POD_NAME";
    public static final String NAMESPACE_ENV = "SMOOTHSCALE_NAMESPACE";
    public static final String APP_ENV = "SMOOTHSCALE_APP";
    public static final String ASSIGNMENT_CONFIGMAP_ENV = "SMOOTHSCALE_ASSIGNMENT_CONFIGMAP";
    public static final String KUBECONFIG_ENV = "SMOOTHSCALE_KUBECONFIG";
    public static final String METRICS_HOST_ENV = "SMOOTHSCALE_METRICS_HOST";
    public static final String METRICS_PORT_ENV = "SMOOTHSCALE_METRICS_PORT";
    public static final int DEFAULT_METRICS_PORT = 8080;
    private static final Logger LOG = LoggerFactory.getLogger(SmoothscaleBridge.class);
    private static final long RETRY_MILLIS = 2_000;
    private static final int MAX_REQUESTS = 5;
    /**
     * The main consumers' heartbeat interval unless the app chose one: the members that a rebalance does not
     * concern learn that it started only from their next heartbeat, and the rebalance waits for all of them.
     * Kafka's default of 3 s made each follow-up rebalance of a hand-over (and a new owner's switch to
     * RUNNING, whose committed-offset fetch queues behind the pending JoinGroup) wait up to 3 s.
     */
    static final int HEARTBEAT_INTERVAL_MS = 200;
    /**
     * The restore consumer's {@code fetch.max.wait.ms} unless the app chose one: a moved task whose warmup has
     * caught up is RUNNING only once its changelog position is confirmed, by a fetch that queues behind the
     * one in flight for the pod's other (caught-up) standbys, which the broker holds for this long when they
     * have nothing new (Kafka's default: 500 ms). Costs up to ten empty fetches a second per idle pod.
     */
    static final int RESTORE_FETCH_MAX_WAIT_MS = 100;

    private final String pod;
    private final String namespace;
    private final String configMapName;
    private final String metricsHost;
    private final int metricsPort;
    private final Path kubeconfig;
    private final LatestPublication publications = new LatestPublication();
    private final RebalanceTrigger trigger = new RebalanceTrigger();
    private final PrometheusRegistry registry = new PrometheusRegistry();
    private final AssignorMetrics assignorMetrics = new AssignorMetrics(registry);
    private final PlanPatience planPatience = new PlanPatience();
    private final TopologyReport topologyReport = new TopologyReport(registry);
    private KubernetesClient kubernetes;
    private PublicationWatch watch;
    private boolean closed;
    private PublicationFollower follower;
    private HTTPServer server;

    /**
     * @param pod this pod's name (the operator's client id for it)
     * @param namespace the app's namespace
     * @param configMapName the assignment ConfigMap, {@code <app>-assignment}
     * @param metricsHost the address the metrics endpoint binds
     * @param metricsPort the metrics port (0: any free port)
     * @param kubeconfig a kubeconfig to reach the API with; null for the pod's service account
     */
    public SmoothscaleBridge(String pod, String namespace, String configMapName, String metricsHost,
                             int metricsPort, Path kubeconfig) {
        this.pod = Objects.requireNonNull(pod, "pod");
        this.namespace = Objects.requireNonNull(namespace, "namespace");
        this.configMapName = Objects.requireNonNull(configMapName, "configMapName");
        this.metricsHost = Objects.requireNonNull(metricsHost, "metricsHost");
        this.metricsPort = metricsPort;
        this.kubeconfig = kubeconfig;
    }

    /** The bridge of the pod the process runs in, from the environment the operator gives every pod. */
    public static SmoothscaleBridge fromEnvironment() {
        return fromEnvironment(System.getenv());
    }

    static SmoothscaleBridge fromEnvironment(Map<String, String> env) {
        String pod = required(env, POD_NAME_ENV);
        String namespace = required(env, NAMESPACE_ENV);
        String configMap = env.get(ASSIGNMENT_CONFIGMAP_ENV);
        if (configMap == null || configMap.isBlank()) {
            configMap = required(env, APP_ENV) + "-assignment";
        }
        String port = env.getOrDefault(METRICS_PORT_ENV, Integer.toString(DEFAULT_METRICS_PORT));
        int metricsPort;
        try {
            metricsPort = Integer.parseInt(port.strip());
        } catch (NumberFormatException error) {
            throw new IllegalArgumentException(METRICS_PORT_ENV + " must be a port number, got '" + port + "'", error);
        }
        String kubeconfig = env.get(KUBECONFIG_ENV);
        return new SmoothscaleBridge(pod, namespace, configMap, env.getOrDefault(METRICS_HOST_ENV, "0.0.0.0"),
            metricsPort, kubeconfig == null || kubeconfig.isBlank() ? null : Path.of(kubeconfig));
    }

    private static String required(Map<String, String> env, String name) {
        String value = env.get(name);
        if (value == null || value.isBlank()) {
            throw new IllegalArgumentException(name + " is not set: the pod's name, namespace and app come from"
                + " the environment the operator gives each pod");
        }
        return value;
    }

    /**
     * The app's Streams properties, plus what the bridge needs: {@code client.id} = the pod's name (how the
     * leader tells pods apart), {@code task.assignor.class} = {@link OperatorTaskAssignor} with this bridge
     * under {@link #CONFIG_KEY}, and {@code metrics.recording.level=DEBUG} unless the app set a level (per-task
     * process rates), and, unless the app set them, the main consumer's {@code heartbeat.interval.ms} and the
     * restore consumer's {@code fetch.max.wait.ms} (see {@link #HEARTBEAT_INTERVAL_MS} and
     * {@link #RESTORE_FETCH_MAX_WAIT_MS}: both bound how long a moved task pauses). Returns a copy; a
     * {@code client.id} the app set to something else is an error.
     */
    public Properties configure(Properties app) {
        Properties props = new Properties();
        props.putAll(app);
        Object clientId = props.get(CommonClientConfigs.CLIENT_ID_CONFIG);
        if (clientId != null && !pod.equals(clientId)) {
            throw new IllegalArgumentException("client.id is '" + clientId + "' but must be the pod's name '" + pod
                + "': the assignor finds each pod's Kafka Streams client by it");
        }
        props.put(StreamsConfig.CLIENT_ID_CONFIG, pod);
        props.put(StreamsConfig.TASK_ASSIGNOR_CLASS_CONFIG, OperatorTaskAssignor.class.getName());
        props.put(CONFIG_KEY, this);
        props.putIfAbsent(StreamsConfig.METRICS_RECORDING_LEVEL_CONFIG, "DEBUG");
        defaultUnlessSet(props, StreamsConfig.mainConsumerPrefix(ConsumerConfig.HEARTBEAT_INTERVAL_MS_CONFIG),
            HEARTBEAT_INTERVAL_MS);
        defaultUnlessSet(props, StreamsConfig.restoreConsumerPrefix(ConsumerConfig.FETCH_MAX_WAIT_MS_CONFIG),
            RESTORE_FETCH_MAX_WAIT_MS);
        return props;
    }

    /** Set a consumer config for one kind of consumer ({@code prefixed}, e.g. {@code main.consumer.<config>}),
     * unless the app set it for every client, every consumer or that kind. */
    private static void defaultUnlessSet(Properties props, String prefixed, int value) {
        String config = prefixed.substring(prefixed.indexOf("consumer.") + "consumer.".length());
        if (Stream.of(config, StreamsConfig.consumerPrefix(config), prefixed).noneMatch(props::containsKey)) {
            props.put(prefixed, value);
        }
    }

    /** Kafka's usual clients, with main consumers that can start a rebalance for a new publication. */
    public KafkaClientSupplier clientSupplier() {
        return new RebalancingClientSupplier(trigger);
    }

    /** Watch the assignment ConfigMap, follow it, and serve the metrics; call before {@code streams.start()}. */
    public synchronized void start(KafkaStreams streams, Topology topology) {
        daemon("smoothscale-rocksdb-warmup", RocksDbWarmup::run);
        TaskStates taskStates = new TaskStates(topology.describe());
        follower = new PublicationFollower(pod, publications, trigger, () -> PublicationFollower.of(streams),
            taskStates.statefulSubtopologies(), RETRY_MILLIS, MAX_REQUESTS);
        new ContractMetrics(streams, taskStates, follower::runningGeneration, registry);
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
        try {
            server = HTTPServer.builder().hostname(metricsHost).port(metricsPort).registry(registry).buildAndStart();
        } catch (IOException error) {
            throw new UncheckedIOException("cannot serve metrics on " + metricsHost + ":" + metricsPort, error);
        }
        // Reading the kubeconfig and building the Kubernetes client took 5-6 s of class loading in a new JVM
        // on a busy machine: the Kafka Streams client joins its group meanwhile (a leader without a
        // publication falls back to Kafka's assignment; the pod reports a generation once it follows one).
        daemon("smoothscale-watch-start", this::watchAssignment);
        follower.start();
        LOG.info("smoothscale bridge for pod {} follows ConfigMap {}/{}; metrics on {}:{}", pod, namespace,
            configMapName, metricsHost, server.getPort());
    }

    private static void daemon(String name, Runnable task) {
        Thread thread = new Thread(task, name);
        thread.setDaemon(true);
        thread.start();
    }

    private void watchAssignment() {
        try {
            KubernetesClient client = new KubernetesClientBuilder().withConfig(kubernetesConfig()).build();
            PublicationWatch started = new PublicationWatch(client, namespace, configMapName, publications);
            synchronized (this) {
                if (closed) {
                    started.close();
                    client.close();
                    return;
                }
                kubernetes = client;
                watch = started;
            }
        } catch (RuntimeException error) {
            LOG.error("Cannot watch ConfigMap {}: every rebalance falls back to Kafka's own assignment",
                configMapName(), error);
            publications.reject("cannot watch " + configMapName() + ": " + error);
        }
    }

    /**
     * The pod's service account, or the given kubeconfig. Watches are plain HTTP streams, as client-go and
     * kubectl make them, rather than fabric8's default WebSocket upgrade, which not every API front end
     * (proxies, test servers) passes through.
     */
    private Config kubernetesConfig() {
        Config config;
        if (kubeconfig == null) {
            config = new io.fabric8.kubernetes.client.ConfigBuilder().build();
        } else {
            try {
                config = Config.fromKubeconfig(Files.readString(kubeconfig));
            } catch (IOException error) {
                throw new UncheckedIOException("cannot read kubeconfig " + kubeconfig, error);
            }
        }
        config.setOnlyHttpWatches(true);
        return config;
    }

    public LatestPublication publications() {
        return publications;
    }

    public AssignorMetrics assignorMetrics() {
        return assignorMetrics;
    }

    /** The topology this pod saw when it last led a rebalance, served on its metrics endpoint. */
    public TopologyReport topologyReport() {
        return topologyReport;
    }

    /** How long the leader has waited for the operator to plan for idle members (kept across rebalances). */
    PlanPatience planPatience() {
        return planPatience;
    }

    public PrometheusRegistry registry() {
        return registry;
    }

    public String pod() {
        return pod;
    }

    public String configMapName() {
        return namespace + "/" + configMapName;
    }

    /** The port the metrics endpoint listens on (after {@link #start}). */
    public int metricsPort() {
        return server.getPort();
    }

    /** The generation this instance runs (-1 until it runs one). */
    public long runningGeneration() {
        return follower == null ? -1 : follower.runningGeneration();
    }

    @Override
    public synchronized void close() {
        closed = true;
        if (follower != null) {
            follower.close();
        }
        if (watch != null) {
            watch.close();
        }
        if (kubernetes != null) {
            kubernetes.close();
        }
        if (server != null) {
            server.close();
        }
    }
}
