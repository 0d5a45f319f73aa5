package io.smoothscale.streams;

import java.io.IOException;
import java.io.InputStream;
import java.util.Properties;
import org.apache.kafka.streams.KafkaStreams;

/**
 * The oldest Kafka Streams the bridge runs with, checked when the bridge is built: before 3.8 Kafka Streams has
 * no KIP-924 {@code task.assignor.class} and would ignore the setting, running its own assignment while the
 * pods reported following the operator's.
 */
final class KafkaStreamsVersion {
    static final int MIN_MAJOR = 3;
    static final int MIN_MINOR = 8;

    private KafkaStreamsVersion() {}

    /** Fail unless the Kafka on the classpath is 3.8 or later. */
    static void requireSupported() {
        requireSupported(onClasspath());
    }

    /** The version Kafka's client jar records in {@code kafka/kafka-version.properties} (read there rather than
     * through {@code AppInfoParser}, which moved to an internal package in 4.4); "unknown" without it. */
    static String onClasspath() {
        try (InputStream in = KafkaStreams.class.getResourceAsStream("/kafka/kafka-version.properties")) {
            Properties properties = new Properties();
            if (in != null) {
                properties.load(in);
            }
            return properties.getProperty("version", "unknown").strip();
        } catch (IOException error) {
            return "unknown";
        }
    }

    static void requireSupported(String version) {
        String[] parts = version.split("[.-]");
        int major;
        int minor;
        try {
            major = Integer.parseInt(parts[0]);
            minor = parts.length > 1 ? Integer.parseInt(parts[1]) : 0;
        } catch (NumberFormatException error) {
            return;  // no release number (a build of Kafka of its own, or no version file): nothing to judge by
        }
        if (major < MIN_MAJOR || major == MIN_MAJOR && minor < MIN_MINOR) {
            throw new IllegalStateException("Kafka Streams " + version + " is on the classpath, but smoothscale-streams"
                + " needs " + MIN_MAJOR + "." + MIN_MINOR + " or later (KIP-924's task.assignor.class, which older"
                + " versions ignore): upgrade org.apache.kafka:kafka-streams");
        }
    }
}
