package io.smoothscale.streams;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.prometheus.metrics.expositionformats.PrometheusTextFormatWriter;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.TreeSet;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.streams.processor.TaskId;
import org.apache.kafka.streams.processor.assignment.TaskInfo;
import org.apache.kafka.streams.processor.assignment.TaskTopicPartition;
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

    private record Partition(TopicPartition topicPartition, boolean isSource, boolean isChangelog)
        implements TaskTopicPartition {
        @Override
        public Optional<Set<String>> rackIds() {
            return Optional.empty();
        }
    }

    private record Info(TaskId id, Set<TaskTopicPartition> topicPartitions) implements TaskInfo {
        @Override
        public boolean isStateful() {
            return true;
        }

        @Override
        public Set<String> stateStoreNames() {
            return Set.of("customers-store");
        }
    }

    @Test
    void aKTablesSourceTopicThatIsItsChangelogIsBothAnInputAndAChangelog() {
        // builder.table("customers", Materialized.as("customers-store")) joined with a stream of "orders", under
        // topology.optimization=all: the store restores from "customers", which Kafka Streams marks source and
        // changelog at once; no app-customers-store-changelog exists
        TaskId task = new TaskId(0, 1);
        TaskInfo info = new Info(task, Set.of(new Partition(new TopicPartition("customers", 1), true, true),
            new Partition(new TopicPartition("orders", 1), true, false)));
        TopologyReport.Subtopology sub = TopologyReport.summarize(Map.of(task, info)).get(0);
        assertEquals(new TreeSet<>(Set.of("customers", "orders")), sub.inputTopics());
        assertEquals(new TreeSet<>(Set.of("customers")), sub.changelogTopics());
    }
}
