package io.smoothscale.streams;

import org.apache.kafka.common.utils.AppInfoParser;

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
        requireSupported(AppInfoParser.getVersion());
    }

    static void requireSupported(String version) {
        String[] parts = version.split("[.-]");
        int major;
        int minor;
        try {
            major = Integer.parseInt(parts[0]);
            minor = parts.length > 1 ? Integer.parseInt(parts[1]) : 0;
        } catch (NumberFormatException error) {
            return;  // a build of Kafka's own with no release number: nothing to judge by
        }
        if (major < MIN_MAJOR || major == MIN_MAJOR && minor < MIN_MINOR) {
            throw new IllegalStateException("Kafka Streams " + version + " is on the classpath, but smoothscale-streams"
                + " needs " + MIN_MAJOR + "." + MIN_MINOR + " or later (KIP-924's task.assignor.class, which older"
                + " versions ignore): upgrade org.apache.kafka:kafka-streams");
        }
    }
}
