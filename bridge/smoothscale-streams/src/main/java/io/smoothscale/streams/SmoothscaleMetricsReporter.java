package io.smoothscale.streams;

import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.atomic.AtomicLong;
import org.apache.kafka.common.metrics.KafkaMetric;
import org.apache.kafka.common.metrics.MetricsContext;
import org.apache.kafka.common.metrics.MetricsReporter;
import org.apache.kafka.streams.StreamsConfig;
import org.apache.kafka.streams.processor.internals.assignment.ReferenceContainer;

/**
 * The bridge for apps that adopt smoothscale by configuration alone ({@code metric.reporters}): Kafka Streams
 * hands this reporter its settings and its metrics, which is all the bridge needs besides the task assignor
 * ({@code task.assignor.class=}{@link OperatorTaskAssignor}).
 *
 * <pre>
 * metric.reporters=io.smoothscale.streams.SmoothscaleMetricsReporter
 * task.assignor.class=io.smoothscale.streams.OperatorTaskAssignor
 * client.id=${SMOOTHSCALE_POD_NAME}      (the pod's name, however the app's framework reads the environment)
 * </pre>
 *
 * <p>Kafka Streams makes one instance for its own metrics registry and one for every Kafka client it creates.
 * The instance of the Streams registry (metrics context namespace {@code kafka.streams}) starts the pod's
 * {@link SmoothscaleBridge} from the app's settings ({@code smoothscale.*}, else the pod's environment) when
 * {@code KafkaStreams} is constructed, refusing conflicting settings there
 * ({@link SmoothscaleBridge#refuseConfigurationConflicts}), and closes it with {@code KafkaStreams}. The
 * instances of the stream threads' restore consumers pass on the changelogs' per-partition lag; those of the
 * main consumers pass on each thread's follow-up rebalance schedule (Kafka Streams' own, in the consumer's
 * settings: setting it to now makes the thread start a rebalance from its loop, as it does for the follow-ups
 * a task assignor asks for). That schedule is the one part of Kafka Streams' internals the bridge touches; the
 * compatibility builds compile and test it against every supported version. Every other client's instance
 * does nothing.
 */
public class SmoothscaleMetricsReporter implements MetricsReporter {
    /** The metrics context namespace of Kafka Streams' own registry (its JMX domain). */
    static final String STREAMS_NAMESPACE = "kafka.streams";

    private Map<String, Object> configs = Map.of();
    private ReportedClient client;
    private AtomicLong rebalanceSchedule;
    private SmoothscaleBridge bridge;

    @Override
    public void configure(Map<String, ?> settings) {
        configs = new HashMap<>(settings);
        Object clientId = settings.get(StreamsConfig.CLIENT_ID_CONFIG);
        Optional<String> streamsClient = clientId == null ? Optional.empty()
            : ReportedClient.clientOfConsumer(clientId.toString());
        if (streamsClient.isEmpty()) {
            return;
        }
        client = ReportedClient.of(streamsClient.get());
        if (settings.get(StreamsConfig.InternalConfig.REFERENCE_CONTAINER_PARTITION_ASSIGNOR) instanceof ReferenceContainer
            references) {
            rebalanceSchedule = references.nextScheduledRebalanceMs;
            client.addRebalanceSchedule(rebalanceSchedule);
        }
    }

    @Override
    public void contextChange(MetricsContext context) {
        if (bridge != null || !STREAMS_NAMESPACE.equals(context.contextLabels().get(MetricsContext.NAMESPACE))) {
            return;
        }
        Object clientId = configs.get(StreamsConfig.CLIENT_ID_CONFIG);
        client = ReportedClient.of(clientId == null ? "" : clientId.toString());
        bridge = SmoothscaleBridge.startReported(client, configs);
    }

    @Override
    public void init(List<KafkaMetric> metrics) {
        metrics.forEach(this::metricChange);
    }

    @Override
    public void metricChange(KafkaMetric metric) {
        if (client != null && ReportedTasks.wanted(metric.metricName())) {
            client.put(metric);
        }
    }

    @Override
    public void metricRemoval(KafkaMetric metric) {
        if (client != null) {
            client.remove(metric);
        }
    }

    @Override
    public void close() {
        if (rebalanceSchedule != null) {
            client.removeRebalanceSchedule(rebalanceSchedule);
        }
        if (bridge != null) {
            bridge.close();
        }
    }
}
