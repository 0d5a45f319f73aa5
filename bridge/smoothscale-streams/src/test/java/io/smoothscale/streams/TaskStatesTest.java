package io.smoothscale.streams;

import static org.junit.jupiter.api.Assertions.assertEquals;

import java.util.HashMap;
import java.util.Map;
import java.util.Set;
import org.apache.kafka.common.Metric;
import org.apache.kafka.common.MetricName;
import org.apache.kafka.common.serialization.Serdes;
import org.apache.kafka.streams.LagInfo;
import org.apache.kafka.streams.LagInfos;
import org.apache.kafka.streams.StreamsBuilder;
import org.apache.kafka.streams.kstream.Consumed;
import org.apache.kafka.streams.kstream.Grouped;
import org.apache.kafka.streams.kstream.Materialized;
import org.apache.kafka.streams.kstream.Repartitioned;
import org.junit.jupiter.api.Test;

class TaskStatesTest {
    /** Subtopology 0 is stateless; subtopology 1 has two stores (a count and a reduce). */
    private static TaskStates states() {
        StreamsBuilder builder = new StreamsBuilder();
        var grouped = builder.stream("in", Consumed.with(Serdes.String(), Serdes.String()))
            .selectKey((k, v) -> v)
            .repartition(Repartitioned.with(Serdes.String(), Serdes.String()).withName("by-value"))
            .groupByKey(Grouped.with(Serdes.String(), Serdes.String()));
        grouped.count(Materialized.as("counts"));
        grouped.reduce((a, b) -> b, Materialized.as("latest"));
        return new TaskStates(builder.build().describe());
    }

    @Test
    void lagsAreSummedOverEachTasksStores() {
        Map<String, Map<Integer, LagInfo>> lags = Map.of(
            "counts", Map.of(0, lag(90, 100), 3, lag(40, 40)),
            "latest", Map.of(0, lag(95, 100)),
            "unknown-global-store", Map.of(0, lag(0, 7)));

        Map<String, TaskStates.TaskState> byTask = states().byTask(lags);

        assertEquals(Map.of("1_0", new TaskStates.TaskState(15, 200), "1_3", new TaskStates.TaskState(0, 40)), byTask);
        assertEquals(Set.of(1), states().statefulSubtopologies());
    }

    private static LagInfo lag(long position, long end) {
        return LagInfos.of(position, end);
    }

    @Test
    void processRatesAreKafkasTaskLevelRatesSummedOverThreads() {
        Map<MetricName, Metric> metrics = new HashMap<>();
        metrics.put(name("process-rate", "stream-task-metrics", "0_1", "t1"), metric(12.5));
        metrics.put(name("process-rate", "stream-task-metrics", "0_1", "t2"), metric(2.5));
        metrics.put(name("process-rate", "stream-task-metrics", "1_0", "t1"), metric(Double.NaN));
        metrics.put(name("process-total", "stream-task-metrics", "0_1", "t1"), metric(900.0));
        metrics.put(name("process-rate", "stream-thread-metrics", "0_1", "t1"), metric(99.0));

        assertEquals(Map.of("0_1", 15.0, "1_0", 0.0), ContractMetrics.processRates(() -> metrics));
    }

    private static MetricName name(String name, String group, String task, String thread) {
        return new MetricName(name, group, "", Map.of("task-id", task, "thread-id", thread));
    }

    private static Metric metric(double value) {
        return new Metric() {
            @Override
            public MetricName metricName() {
                return null;
            }

            @Override
            public Object metricValue() {
                return value;
            }
        };
    }
}
