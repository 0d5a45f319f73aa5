package io.smoothscale.streams;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.HashMap;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import org.apache.kafka.common.MetricName;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.Serdes;
import org.apache.kafka.streams.StreamsBuilder;
import org.apache.kafka.streams.Topology;
import org.apache.kafka.streams.kstream.Consumed;
import org.apache.kafka.streams.kstream.Grouped;
import org.apache.kafka.streams.kstream.Materialized;
import org.apache.kafka.streams.kstream.Repartitioned;
import org.junit.jupiter.api.Test;

class ReportedTasksTest {
    /** Subtopology 0 is a global store's (no task), 1 is stateless, 2 has two stores. */
    private static Topology topology() {
        StreamsBuilder builder = new StreamsBuilder();
        builder.globalTable("rates", Consumed.with(Serdes.String(), Serdes.String()), Materialized.as("rates-store"));
        var grouped = builder.stream("in", Consumed.with(Serdes.String(), Serdes.String()))
            .selectKey((k, v) -> v)
            .repartition(Repartitioned.with(Serdes.String(), Serdes.String()).withName("by-value"))
            .groupByKey(Grouped.with(Serdes.String(), Serdes.String()));
        grouped.count(Materialized.as("counts"));
        grouped.reduce((a, b) -> b, Materialized.as("latest"));
        return builder.build();
    }

    @Test
    void theTopologyDescriptionMetricGivesEachStoresSubtopologyAsTheDescriptionItselfDoes() {
        String text = topology().describe().toString();
        Map<String, Integer> parsed = StoreSubtopologies.parse(text);
        assertEquals(StoreSubtopologies.of(topology().describe()), parsed);
        assertEquals(Map.of("counts", 2, "latest", 2), parsed, text);
    }

    private static MetricName client(String name) {
        return new MetricName(name, ReportedTasks.CLIENT_GROUP, "", Map.of("client-id", "orders-0"));
    }

    private static MetricName task(String name, String task) {
        return new MetricName(name, ReportedTasks.TASK_GROUP, "", Map.of("thread-id", "orders-0-StreamThread-1", "task-id", task));
    }

    private static MetricName fetchLag(String topic, int partition) {
        return new MetricName(ReportedTasks.RECORDS_LAG, ReportedTasks.FETCH_GROUP, "", Map.of(
            "client-id", "orders-0-StreamThread-1-restore-consumer", "topic", topic, "partition", Integer.toString(partition)));
    }

    /** Actives 1_1 (stateless) and 2_0, standbys 2_2 and 2_3, as Kafka Streams 3.8 to 4.4 register them. */
    private static MetricName updater(String name) {
        return new MetricName(name, ReportedTasks.UPDATER_GROUP, "", Map.of("thread-id", "orders-0-StateUpdater-1"));
    }

    private static Map<MetricName, Object> reported(String state) {
        Map<MetricName, Object> values = new HashMap<>();
        values.put(client(ReportedTasks.STATE), state);
        values.put(client(ReportedTasks.TOPOLOGY), topology().describe().toString());
        for (String active : new String[] {"1_1", "2_0"}) {
            values.put(task(ReportedTasks.ACTIVE_MARKER, active), 0.5);
            values.put(task(ReportedTasks.RESTORE_REMAINING, active), 0.0);
            values.put(task("dropped-records-total", active), 0.0);
        }
        values.put(task(ReportedTasks.RESTORE_REMAINING, "2_0"), 70.0);
        values.put(task(ReportedTasks.STANDBY_MARKER, "2_2"), 12.0);
        values.put(task(ReportedTasks.STANDBY_MARKER, "2_3"), 0.0);
        values.put(fetchLag("orders-counts-changelog", 2), 5.0);
        values.put(fetchLag("orders-latest-changelog", 2), 7.0);
        values.put(fetchLag("orders-counts-changelog", 3), Double.NaN);
        values.put(fetchLag("orders-latest-changelog", 9), 999.0);
        return values;
    }

    @Test
    void aRunningClientRunsTheTasksWhoseMetricsItRegistered() {
        assertEquals(Optional.of(new RunningTasks(Set.of("1_1", "2_0"), Set.of("2_2", "2_3"))),
            ReportedTasks.running(reported("RUNNING")));
        Map<MetricName, Object> markers = new HashMap<>(reported("RUNNING"));
        markers.keySet().removeIf(name -> !ReportedTasks.runningInput(name));
        assertEquals(ReportedTasks.running(reported("RUNNING")), ReportedTasks.running(markers),
            "the follower reads only the state and the markers, every 100 ms");
        assertEquals(Optional.empty(), ReportedTasks.running(reported("REBALANCING")),
            "tasks are read only while RUNNING, as KafkaStreams.metadataForLocalThreads() is");
    }

    @Test
    void aStandbyRevivedWithoutItsMetricsRunsWhileItsRestoreConsumerFetchesItsChangelogs() {
        Map<String, Integer> stores = StoreSubtopologies.parse(topology().describe().toString());
        Map<MetricName, Object> revived = new HashMap<>(reported("RUNNING"));
        revived.remove(task(ReportedTasks.STANDBY_MARKER, "2_2"));  // closed dirty as corrupted, then revived
        assertEquals(Optional.of(new RunningTasks(Set.of("1_1", "2_0"), Set.of("2_3"))), ReportedTasks.running(revived));
        assertEquals(ReportedTasks.running(revived), ReportedTasks.running(revived, "orders", stores),
            "no state updater counts more standbys than have markers: the restore consumer's lags may be stale");
        revived.put(updater(ReportedTasks.STANDBYS_UPDATING), 2);
        revived.put(updater(ReportedTasks.STANDBYS_PAUSED), 1);
        assertEquals(Optional.of(new RunningTasks(Set.of("1_1", "2_0"), Set.of("2_2", "2_3", "2_9"))),
            ReportedTasks.running(revived, "orders", stores),
            "2_2 and 2_9 from the restore consumer's lags of their changelogs; 2_0's own, if any, stay an active's");
        revived.put(fetchLag("orders-counts-changelog", 0), 3.0);
        revived.put(new MetricName(ReportedTasks.RECORDS_LAG, ReportedTasks.FETCH_GROUP, "", Map.of(
            "client-id", "orders-0-StreamThread-1-consumer", "topic", "orders-latest-changelog", "partition", "5")), 1.0);
        revived.put(fetchLag("in", 4), 1.0);
        assertEquals(Optional.of(new RunningTasks(Set.of("1_1", "2_0"), Set.of("2_2", "2_3", "2_9"))),
            ReportedTasks.running(revived, "orders", stores),
            "an active restoring is no standby; the main consumer's lags and other topics name no task");
        Map<MetricName, Object> read = new HashMap<>(revived);
        read.keySet().removeIf(name -> !ReportedTasks.runningInput(name));
        assertEquals(ReportedTasks.running(revived, "orders", stores), ReportedTasks.running(read, "orders", stores));
        assertEquals(Optional.empty(), ReportedTasks.running(reported("REBALANCING"), "orders", stores));
    }

    @Test
    void standbysLagByTheirRestoreConsumersFetchesAndActivesByWhatRemainsToRestore() {
        Map<String, Integer> stores = StoreSubtopologies.parse(topology().describe().toString());
        Map<TopicPartition, Long> ends = Map.of(
            new TopicPartition("orders-counts-changelog", 0), 100L, new TopicPartition("orders-latest-changelog", 0), 50L,
            new TopicPartition("orders-counts-changelog", 2), 30L, new TopicPartition("orders-latest-changelog", 2), 20L,
            new TopicPartition("orders-counts-changelog", 3), 8L, new TopicPartition("orders-latest-changelog", 3), 4L);

        Map<String, TaskStates.TaskState> running = ReportedTasks.taskStates(reported("RUNNING"), "orders", stores, ends);
        assertEquals(Map.of(
            "2_0", new TaskStates.TaskState(0, 150),   // running: every active has restored
            "2_2", new TaskStates.TaskState(12, 50),   // the restore consumer's lag of each store
            "2_3", new TaskStates.TaskState(12, 12)),  // not fetched yet: all of it behind
            running, "1_1 is stateless: no state, no lag");

        Map<String, TaskStates.TaskState> restoring = ReportedTasks.taskStates(reported("REBALANCING"), "orders", stores, ends);
        assertEquals(new TaskStates.TaskState(70, 150), restoring.get("2_0"), "an active still restoring");
    }

    @Test
    void aReporterKeepsTheStreamsGroupsAndTheConsumersPartitionLagsOnly() {
        assertTrue(ReportedTasks.wanted(task(ReportedTasks.ACTIVE_MARKER, "1_0")));
        assertTrue(ReportedTasks.wanted(fetchLag("t", 0)));
        assertEquals(false, ReportedTasks.wanted(new MetricName(ReportedTasks.RECORDS_LAG, ReportedTasks.FETCH_GROUP, "",
            Map.of("client-id", "c"))), "records-lag-max's per-client sibling is not a partition's");
        assertEquals(false, ReportedTasks.wanted(new MetricName("request-rate", "consumer-metrics", "", Map.of())));
    }

    @Test
    void aStreamThreadsConsumersNameTheirStreamsClient() {
        assertEquals(Optional.of("orders-0"), ReportedClient.clientOfConsumer("orders-0-StreamThread-2-consumer"));
        assertEquals(Optional.of("orders-0"), ReportedClient.clientOfConsumer("orders-0-StreamThread-1-restore-consumer"));
        assertEquals(Optional.of("orders-0"), ReportedClient.clientOfConsumer("orders-0-StateUpdater-1-restore-consumer"),
            "Kafka Streams 4.x: the state updater thread's restore consumer");
        assertEquals(Optional.empty(), ReportedClient.clientOfConsumer("orders-0-StateUpdater-1-consumer"));
        assertEquals(Optional.empty(), ReportedClient.clientOfConsumer("orders-0-StreamThread-1-producer"));
        assertEquals(Optional.empty(), ReportedClient.clientOfConsumer("orders-0-admin"));
    }
}
