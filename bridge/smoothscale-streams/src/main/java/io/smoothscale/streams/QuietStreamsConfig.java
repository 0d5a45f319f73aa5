package io.smoothscale.streams;

import java.util.Map;
import org.apache.kafka.streams.StreamsConfig;

/** The app's Streams settings read without logging them all again (Kafka Streams logged them at its start). */
final class QuietStreamsConfig extends StreamsConfig {
    QuietStreamsConfig(Map<?, ?> props) {
        super(props, false);
    }
}
