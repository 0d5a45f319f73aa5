package io.smoothscale.streams;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
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

    private static MetricName store(String task) {
        return new MetricName("put-rate", ReportedTasks.STORE_GROUP, "",
            Map.of("thread-id", "orders-0-StreamThread-1", "task-id", task, "rocksdb-state-id", "counts"));
    }

    private static MetricName fetchLag(String topic, int partition) {
        return new MetricName(ReportedTasks.RECORDS_LAG, ReportedTasks.FETCH_GROUP, "", Map.of(
            "client-id", "orders-0-StreamThread-1-restore-consumer", "topic", topic, "partition", Integer.toString(partition)));
    }

    /** Actives 1_1 (stateless) and 2_0, standbys 2_2 and 2_3, as Kafka Streams 3.8 to 4.4 register them. */
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
        for (String stateful : new String[] {"2_0", "2_2", "2_3"}) {
            values.put(store(stateful), 0.0);
        }
        values.put(fetchLag("orders-counts-changelog", 2), 5.0);
        values.put(fetchLag("orders-latest-changelog", 2), 7.0);
        values.put(fetchLag("orders-counts-changelog", 3), Double.NaN);
        values.put(fetchLag("orders-latest-changelog", 9), 999.0);
        return values;
    }

    @Test
    void aRunningClientRunsTheTasksWhoseMetricsItRegistered() {
        assertEquals(Optional.of(new RunningTasks(Set.of("1_1", "2_0"), Set.of("2_2", "2_3"))),
            ReportedTasks.running(reported("RUNNING"), Map.of()));
        Map<MetricName, Object> markers = new HashMap<>(reported("RUNNING"));
        markers.keySet().removeIf(name -> !ReportedTasks.runningInput(name));
        assertEquals(ReportedTasks.running(reported("RUNNING"), Map.of()), ReportedTasks.running(markers, Map.of()),
            "the follower reads only the state and the markers, every 100 ms");
        assertEquals(Optional.empty(), ReportedTasks.running(reported("REBALANCING"), Map.of()),
            "tasks are read only while RUNNING, as KafkaStreams.metadataForLocalThreads() is");
    }

    @Test
    void aStandbyMarkerLeftBehindWithoutItsStoresIsNotRun() {
        // Restarted with its volume: Kafka Streams made a standby of 2_1 at start-up, on the app's main thread,
        // then a stream thread closed it: its stores' metrics went, its update-total under "main" stayed.
        Map<MetricName, Object> values = new HashMap<>(reported("RUNNING"));
        values.put(new MetricName(ReportedTasks.STANDBY_MARKER, ReportedTasks.TASK_GROUP, "",
            Map.of("thread-id", "main", "task-id", "2_1")), 0.0);
        Map<String, Boolean> lastRoles = Map.of("2_1", false);
        assertEquals(Optional.of(new RunningTasks(Set.of("1_1", "2_0"), Set.of("2_2", "2_3"))),
            ReportedTasks.running(values, lastRoles));
        Map<String, Integer> stores = StoreSubtopologies.parse(topology().describe().toString());
        assertFalse(ReportedTasks.taskStates(values, lastRoles, "orders", stores, Map.of()).containsKey("2_1"));

        values.put(store("2_1"), 0.0);  // a start-up standby kept as a standby keeps its stores: it runs
        assertEquals(Optional.of(new RunningTasks(Set.of("1_1", "2_0"), Set.of("2_1", "2_2", "2_3"))),
            ReportedTasks.running(values, lastRoles));
    }

    @Test
    void aTaskRevivedAfterCorruptionRunsInTheRoleOfItsLastMarker() {
        // Under exactly-once, 2_0 restarted with its volume was found corrupted, closed dirty (its task metrics
        // removed) and revived: its stores registered their metrics again, its marker did not come back.
        Map<MetricName, Object> values = new HashMap<>(reported("RUNNING"));
        values.remove(task(ReportedTasks.ACTIVE_MARKER, "2_0"));
        values.remove(task(ReportedTasks.RESTORE_REMAINING, "2_0"));
        assertEquals(Optional.of(new RunningTasks(Set.of("1_1", "2_0"), Set.of("2_2", "2_3"))),
            ReportedTasks.running(values, Map.of("2_0", true, "2_2", false)));
        assertEquals(Optional.of(new RunningTasks(Set.of("1_1"), Set.of("2_2", "2_3"))),
            ReportedTasks.running(values, Map.of()), "no marker ever seen: not counted");
    }

    @Test
    void standbysLagByTheirRestoreConsumersFetchesAndActivesByWhatRemainsToRestore() {
        Map<String, Integer> stores = StoreSubtopologies.parse(topology().describe().toString());
        Map<TopicPartition, Long> ends = Map.of(
            new TopicPartition("orders-counts-changelog", 0), 100L, new TopicPartition("orders-latest-changelog", 0), 50L,
            new TopicPartition("orders-counts-changelog", 2), 30L, new TopicPartition("orders-latest-changelog", 2), 20L,
            new TopicPartition("orders-counts-changelog", 3), 8L, new TopicPartition("orders-latest-changelog", 3), 4L);

        Map<String, TaskStates.TaskState> running = ReportedTasks.taskStates(reported("RUNNING"), Map.of(), "orders", stores, ends);
        assertEquals(Map.of(
            "2_0", new TaskStates.TaskState(0, 150),   // running: every active has restored
            "2_2", new TaskStates.TaskState(12, 50),   // the restore consumer's lag of each store
            "2_3", new TaskStates.TaskState(12, 12)),  // not fetched yet: all of it behind
            running, "1_1 is stateless: no state, no lag");

        Map<String, TaskStates.TaskState> restoring = ReportedTasks.taskStates(reported("REBALANCING"), Map.of(), "orders", stores, ends);
        assertEquals(new TaskStates.TaskState(70, 150), restoring.get("2_0"), "an active still restoring");
    }

    @Test
    void aStandbyNeitherFetchedNorWithItsChangelogsEndReadHasAnUnknownLagNotZero() {
        // orders-latest-changelog deleted (or not readable): its end could not be read, and 2_3 has fetched
        // nothing of it; read as 0, its lag would make a copy that holds nothing look caught up
        Map<String, Integer> stores = StoreSubtopologies.parse(topology().describe().toString());
        Map<TopicPartition, Long> ends = Map.of(new TopicPartition("orders-counts-changelog", 0), 100L,
            new TopicPartition("orders-counts-changelog", 2), 30L, new TopicPartition("orders-counts-changelog", 3), 8L);
        Map<String, TaskStates.TaskState> states = ReportedTasks.taskStates(reported("RUNNING"), Map.of(), "orders", stores, ends);
        assertEquals(Map.of(
            "2_0", new TaskStates.TaskState(0, 100),   // the active runs: caught up whatever the ends
            "2_2", new TaskStates.TaskState(12, 30)),  // both of its stores fetched: their lags are known
            states, "2_3 is not reported: its lag is unknown");
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
