package io.smoothscale.streams;

import static org.junit.jupiter.api.Assertions.assertDoesNotThrow;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import org.junit.jupiter.api.Test;

class KafkaStreamsVersionTest {
    @Test
    void versionsFromKip924OnAreAccepted() {
        for (String version : new String[] {"3.8.0", "3.9.1", "4.0.0", "4.4.0", "4.5.0-SNAPSHOT", "10.0"}) {
            assertDoesNotThrow(() -> KafkaStreamsVersion.requireSupported(version), version);
        }
        assertDoesNotThrow(() -> KafkaStreamsVersion.requireSupported(), "the Kafka this is built with");
        assertTrue(KafkaStreamsVersion.onClasspath().matches("[34]\\.[0-9]+\\..*"), KafkaStreamsVersion.onClasspath());
    }

    @Test
    void anOlderKafkaStreamsFailsAtStartUpSayingWhatToDo() {
        for (String version : new String[] {"3.7.2", "2.8.0"}) {
            IllegalStateException error = assertThrows(IllegalStateException.class,
                () -> KafkaStreamsVersion.requireSupported(version));
            assertTrue(error.getMessage().startsWith("Kafka Streams " + version + " is on the classpath"), error.getMessage());
            assertTrue(error.getMessage().contains("needs 3.8 or later"), error.getMessage());
        }
    }
}
