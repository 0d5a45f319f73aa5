package io.smoothscale.sample;

import static org.junit.jupiter.api.Assertions.assertDoesNotThrow;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.apache.kafka.streams.errors.StreamsUncaughtExceptionHandler.StreamThreadExceptionResponse;
import org.junit.jupiter.api.Test;

class FaultsTest {
    @Test
    void theSlowKeyIsSlowOnceAndOtherKeysNever() {
        List<Long> slept = new ArrayList<>();
        Faults faults = new Faults("slow", 9000, null, slept::add);
        faults.beforeProcessing("order-1");
        faults.beforeProcessing(null);
        faults.beforeProcessing("slow");
        faults.beforeProcessing("slow");
        assertEquals(List.of(9000L), slept);
    }

    @Test
    void theFailKeyThrowsOnceThenGoesThrough() {
        Faults faults = new Faults(null, 0, "boom", millis -> { });
        faults.beforeProcessing("order-1");
        IllegalStateException error = assertThrows(IllegalStateException.class, () -> faults.beforeProcessing("boom"));
        assertTrue(error.getMessage().contains("ORDERS_FAIL_KEY"), error.getMessage());
        assertDoesNotThrow(() -> faults.beforeProcessing("boom"));
    }

    @Test
    void anUnsetEnvironmentInjectsNothing() {
        Faults faults = Faults.fromEnvironment(Map.of());
        assertDoesNotThrow(() -> faults.beforeProcessing("slow"));
        assertEquals(StreamThreadExceptionResponse.SHUTDOWN_CLIENT, Faults.exceptionResponse(Map.of()));
    }

    @Test
    void theHandlersResponseIsNamedInAnyCase() {
        assertEquals(StreamThreadExceptionResponse.REPLACE_THREAD,
            Faults.exceptionResponse(Map.of("ORDERS_EXCEPTION_RESPONSE", "replace_thread")));
    }

    @Test
    void badSettingsAreRefusedByName() {
        assertMessage("ORDERS_SLOW_KEY and ORDERS_SLOW_MS must be set together", Map.of("ORDERS_SLOW_KEY", "slow"));
        assertMessage("ORDERS_SLOW_MS must be a positive number of milliseconds, not 'soon'",
            Map.of("ORDERS_SLOW_KEY", "slow", "ORDERS_SLOW_MS", "soon"));
        assertMessage("ORDERS_SLOW_MS must be a positive number of milliseconds, not '0'",
            Map.of("ORDERS_SLOW_KEY", "slow", "ORDERS_SLOW_MS", "0"));
        IllegalArgumentException error = assertThrows(IllegalArgumentException.class,
            () -> Faults.exceptionResponse(Map.of("ORDERS_EXCEPTION_RESPONSE", "RESTART")));
        assertTrue(error.getMessage().endsWith("not 'RESTART'"), error.getMessage());
    }

    private static void assertMessage(String expected, Map<String, String> env) {
        IllegalArgumentException error = assertThrows(IllegalArgumentException.class, () -> Faults.fromEnvironment(env));
        assertEquals(expected, error.getMessage());
    }
}
