package io.smoothscale.broker;

import java.io.IOException;
import java.io.Reader;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Map;
import java.util.Properties;
import java.util.function.Function;

/**
 * Where the plugin reads plans from. Kafka 4.4 creates streams assignors with {@code Utils.newInstance} and
 * never calls {@code configure} (GroupCoordinatorConfig.streamsGroupAssignors), so broker properties cannot
 * reach a plugin: its settings are JVM system properties (set through {@code KAFKA_OPTS}, or Strimzi's
 * {@code jvmOptions.javaSystemProperties}), each also readable from an environment variable.
 *
 * <ul>
 *   <li>{@code smoothscale.plans.bootstrap.servers} ({@code SMOOTHSCALE_PLANS_BOOTSTRAP_SERVERS}): the cluster
 *   holding the plan topic, normally the broker's own; unset: the plugin follows no plan and always falls back.
 *   <li>{@code smoothscale.plans.topic} ({@code SMOOTHSCALE_PLANS_TOPIC}, default {@code smoothscale-plans}).
 *   <li>{@code smoothscale.plans.client.config} ({@code SMOOTHSCALE_PLANS_CLIENT_CONFIG}): a properties file
 *   of further client settings (security protocol, SASL, TLS) for that cluster.
 *   <li>{@code smoothscale.groups.topic} ({@code SMOOTHSCALE_GROUPS_TOPIC}, default {@code smoothscale-groups}):
 *   where {@link GroupViewPublisher} writes the views of the groups this broker assigns, in the same cluster.
 *   <li>{@code smoothscale.groups.interval.ms} ({@code SMOOTHSCALE_GROUPS_INTERVAL_MS}, default 1000): how
 *   often it describes them.
 * </ul>
 */
public record PluginSettings(
    String bootstrapServers, String topic, Properties clientConfig, String groupsTopic, long groupsIntervalMs) {
    public static final String DEFAULT_TOPIC = "smoothscale-plans";
    public static final long DEFAULT_GROUPS_INTERVAL_MS = 1000;

    /** The settings of this JVM. */
    public static PluginSettings fromEnvironment() {
        return from(key -> {
            String value = System.getProperty(key);
            return value != null ? value : System.getenv(key.toUpperCase().replace('.', '_'));
        });
    }

    /** The settings that {@code lookup} gives (key: the system property's name). */
    public static PluginSettings from(Function<String, String> lookup) {
        String bootstrap = blankToNull(lookup.apply("smoothscale.plans.bootstrap.servers"));
        String topic = blankToNull(lookup.apply("smoothscale.plans.topic"));
        String clientConfig = blankToNull(lookup.apply("smoothscale.plans.client.config"));
        Properties properties = new Properties();
        if (clientConfig != null) {
            try (Reader reader = Files.newBufferedReader(Path.of(clientConfig))) {
                properties.load(reader);
            } catch (IOException error) {
                throw new IllegalArgumentException("smoothscale.plans.client.config=" + clientConfig
                    + " cannot be read (" + error + "): give the path of a Java properties file of consumer settings",
                    error);
            }
        }
        String groupsTopic = blankToNull(lookup.apply("smoothscale.groups.topic"));
        String interval = blankToNull(lookup.apply("smoothscale.groups.interval.ms"));
        long intervalMs;
        try {
            intervalMs = interval == null ? DEFAULT_GROUPS_INTERVAL_MS : Long.parseLong(interval);
        } catch (NumberFormatException error) {
            intervalMs = -1;
        }
        if (intervalMs < 100) {
            throw new IllegalArgumentException("smoothscale.groups.interval.ms=" + interval
                + " is not a number of milliseconds of at least 100");
        }
        return new PluginSettings(bootstrap, topic == null ? DEFAULT_TOPIC : topic, properties,
            groupsTopic == null ? GroupViewPublisher.DEFAULT_TOPIC : groupsTopic, intervalMs);
    }

    /** The settings as a map, for the log. Client settings are named, never shown (they hold passwords). */
    public Map<String, Object> describe() {
        return Map.of("bootstrapServers", String.valueOf(bootstrapServers), "topic", topic,
            "clientConfigKeys", clientConfig.stringPropertyNames(), "groupsTopic", groupsTopic,
            "groupsIntervalMs", groupsIntervalMs);
    }

    private static String blankToNull(String value) {
        return value == null || value.isBlank() ? null : value.strip();
    }
}
