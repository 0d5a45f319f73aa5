package io.smoothscale.streams;

import static org.junit.jupiter.api.Assertions.assertEquals;

import java.util.Optional;
import org.junit.jupiter.api.Test;

class PodNamesTest {
    @Test
    void aMemberIdNamesThePodWhateverItsLength() {
        String pod = "a-statefulset-whose-name-is-far-longer-than-thirty-characters-0";
        assertEquals(Optional.of(pod),
            PodNames.ofMember(pod + "-StreamThread-12-consumer-5d2c0b4e-7f1a-4c3e-9b8d-0123456789ab"));
        assertEquals(Optional.of("orders-0"), PodNames.ofMember("orders-0-StreamThread-1-consumer"));
    }

    @Test
    void aStaticMembersIdNamesThePodByItsGroupInstanceId() {
        assertEquals(Optional.of("orders-0"), PodNames.ofMember("orders-0-1-5d2c0b4e-7f1a-4c3e-9b8d-0123456789ab"));
        assertEquals(Optional.of("orders-12"), PodNames.ofMember("orders-12-3-5d2c0b4e-7f1a-4c3e-9b8d-0123456789ab"));
        assertEquals(Optional.of("orders-0"),
            PodNames.ofMember("orders-0-StreamThread-1-consumer-5d2c0b4e-7f1a-4c3e-9b8d-0123456789ab"),
            "a dynamic member whose pod ends in digits is still read by its client.id");
    }

    @Test
    void otherConsumersNameNoPod() {
        assertEquals(Optional.empty(), PodNames.ofMember("orders-0-restore-consumer"));
        assertEquals(Optional.empty(), PodNames.ofMember("-StreamThread-1-consumer"));
        assertEquals(Optional.empty(), PodNames.ofMember("orders-0-StreamThread-x-consumer"));
        assertEquals(Optional.empty(), PodNames.ofMember("orders-0-5d2c0b4e-7f1a-4c3e-9b8d-0123456789ab"),
            "a static member id always has the stream thread's index (from 1) before the uuid");
    }
}
