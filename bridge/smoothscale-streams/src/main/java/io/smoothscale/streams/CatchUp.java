package io.smoothscale.streams;

import java.util.Map;
import java.util.Set;
import org.apache.kafka.streams.processor.TaskId;
import org.apache.kafka.streams.processor.assignment.ApplicationState;
import org.apache.kafka.streams.processor.assignment.KafkaStreamsState;
import org.apache.kafka.streams.processor.assignment.ProcessId;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * How far each member's state of each stateful task is behind its changelogs, and so which members are
 * caught up (lag within {@code acceptable.recovery.lag}): Kafka's high-availability assignor runs an active
 * only on a caught-up member when one exists, and so does the fallback.
 *
 * <p>The lags come from {@code kafkaStreamsStates(true)}, which asks the brokers for the changelogs' end
 * offsets. When that fails (a broker restarting), the members' previous tasks stand in for the lags: a
 * previous active counts as caught up, a previous standby as the closest behind, anything else as cold, which
 * is what Kafka's sticky assignor assumes.
 */
final class CatchUp {
    /** Kafka's lag of a task its owner ran until this rebalance ({@code Task.LATEST_OFFSET}): caught up. */
    static final long RUNNING = -2;
    private static final Logger LOG = LoggerFactory.getLogger(CatchUp.class);

    private final Map<ProcessId, KafkaStreamsState> clients;
    private final boolean measured;
    private final long acceptableLag;

    private CatchUp(Map<ProcessId, KafkaStreamsState> clients, boolean measured, long acceptableLag) {
        this.clients = clients;
        this.measured = measured;
        this.acceptableLag = acceptableLag;
    }

    /** The group's lags, measured when the brokers answer, estimated from previous tasks otherwise. */
    static CatchUp of(ApplicationState state) {
        long acceptable = state.assignmentConfigs().acceptableRecoveryLag();
        try {
            return new CatchUp(state.kafkaStreamsStates(true), true, acceptable);
        } catch (RuntimeException error) {
            LOG.warn("Cannot read the changelogs' end offsets ({}): previous tasks stand in for lags", error.toString());
            return new CatchUp(state.kafkaStreamsStates(false), false, acceptable);
        }
    }

    Map<ProcessId, KafkaStreamsState> clients() {
        return clients;
    }

    Set<ProcessId> members() {
        return clients.keySet();
    }

    /** Offsets {@code client} is behind on {@code task} (0 when caught up to the end, a large number when cold). */
    long lag(ProcessId client, TaskId task) {
        KafkaStreamsState state = clients.get(client);
        if (measured) {
            try {
                long lag = state.lagFor(task);
                if (lag == RUNNING) {
                    return 0;
                }
                return lag < 0 ? acceptableLag + 1 : lag;  // an offset Kafka could not read: has state, not caught up
            } catch (RuntimeException error) {
                // a task Kafka has no lag for (stateless, or new since the member's subscription): estimate
            }
        }
        if (state.previousActiveTasks().contains(task)) {
            return 0;
        }
        return state.previousStandbyTasks().contains(task) ? acceptableLag + 1 : Long.MAX_VALUE;
    }

    boolean caughtUp(ProcessId client, TaskId task) {
        return lag(client, task) <= acceptableLag;
    }
}
