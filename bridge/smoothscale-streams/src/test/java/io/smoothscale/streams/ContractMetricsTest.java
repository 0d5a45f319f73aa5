package io.smoothscale.streams;

import static org.junit.jupiter.api.Assertions.assertTrue;

import io.prometheus.metrics.expositionformats.PrometheusTextFormatWriter;
import io.prometheus.metrics.model.registry.PrometheusRegistry;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import org.junit.jupiter.api.Test;

/** The pod's report states the contract version it follows, for the operator to refuse a newer one. */
class ContractMetricsTest {
    private static final TaskSource NOTHING_YET = new TaskSource() {
        @Override
        public Optional<RunningTasks> running() {
            return Optional.empty();
        }

        @Override
        public Map<String, TaskStates.TaskState> states() {
            return Map.of();
        }

        @Override
        public Map<String, Double> processRates() {
            return Map.of();
        }

        @Override
        public Set<Integer> statefulSubtopologies() {
            return Set.of();
        }
    };

    @Test
    void theReportStatesTheContractVersionEvenBeforeAnyTask() throws IOException {
        PrometheusRegistry registry = new PrometheusRegistry();
        new ContractMetrics(NOTHING_YET, () -> -1, registry);

        ByteArrayOutputStream out = new ByteArrayOutputStream();
        PrometheusTextFormatWriter.create().write(out, registry.scrape());
        String text = out.toString(StandardCharsets.UTF_8);
        assertTrue(text.contains("\n" + ContractMetrics.CONTRACT_VERSION + " " + PublicationCodec.CONTRACT_VERSION + ".0\n"),
            text);
        assertTrue(text.contains("smoothscale_contract_version 1.0"), "the name and version the operator reads: " + text);
    }
}
