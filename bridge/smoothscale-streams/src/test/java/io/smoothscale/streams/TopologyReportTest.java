package io.smoothscale.streams;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.prometheus.metrics.expositionformats.PrometheusTextFormatWriter;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;
import org.apache.kafka.streams.processor.TaskId;
import org.junit.jupiter.api.Test;

/** The leader reports the topology it sees on its metrics endpoint, for the operator to learn. */
class TopologyReportTest {
    @Test
    void theLeaderReportsEverySubtopologyItsPartitionsStateAndTopics() throws IOException {
        SmoothscaleBridge bridge = SmoothscaleBridgeTest.bridgeOf("orders-0");
        OperatorTaskAssignor assignor = new OperatorTaskAssignor();
        assignor.configure(Map.of(SmoothscaleBridge.CONFIG_KEY, bridge));
        Group group = new Group().tasks(0, 4, true).tasks(1, 2, false).tasks(2, 3, true, false)
            .member("orders-0", 1, new TreeSet<TaskId>(Set.of()));

        assignor.assign(group);

        ByteArrayOutputStream out = new ByteArrayOutputStream();
        PrometheusTextFormatWriter.create().write(out, bridge.registry().scrape());
        String text = out.toString(StandardCharsets.UTF_8);
        assertTrue(text.contains(TopologyReport.PARTITIONS + "{changelog_topics=\"app-store-0-changelog\","
            + "input_topics=\"input-0\",stateful=\"true\",subtopology=\"0\"} 4.0"), text);
        assertTrue(text.contains(TopologyReport.PARTITIONS + "{changelog_topics=\"\",input_topics=\"input-1\","
            + "stateful=\"false\",subtopology=\"1\"} 2.0"), text);
        assertTrue(text.contains(TopologyReport.PARTITIONS + "{changelog_topics=\"\",input_topics=\"input-2\","
            + "stateful=\"true\",subtopology=\"2\"} 3.0"), "a store with logging disabled: state, no changelog");
        assertEquals(3, bridge.topologyReport().subtopologies().size());
    }
}
