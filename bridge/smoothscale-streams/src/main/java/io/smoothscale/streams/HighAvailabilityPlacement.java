package io.smoothscale.streams;

import java.util.ArrayList;
import java.util.Comparator;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;
import org.apache.kafka.streams.processor.TaskId;
import org.apache.kafka.streams.processor.assignment.ApplicationState;
import org.apache.kafka.streams.processor.assignment.AssignmentConfigs;
import org.apache.kafka.streams.processor.assignment.KafkaStreamsAssignment.AssignedTask;
import org.apache.kafka.streams.processor.assignment.ProcessId;
import org.apache.kafka.streams.processor.assignment.TaskInfo;
import org.apache.kafka.streams.processor.assignment.TaskTopicPartition;

/**
 * Places the tasks the operator's plan does not place, the way Kafka's default, the high-availability
 * assignor (KIP-441), would: a balanced, sticky target first; then every stateful task whose target is not
 * caught up runs on a caught-up member instead, and its target gets a warmup (a standby, at most
 * {@code max.warmup.replicas} of them) so that a later rebalance can move it without a cold restore; then
 * standbys up to {@code num.standby.replicas}, on the members closest to caught up. What is kept (the plan for
 * the members present) is never moved. Pure: the group in, an assignment out.
 *
 * <p>Kafka's own class is internal ({@code HighAvailabilityTaskAssignor}, on {@code ClientState}); its public
 * KIP-924 counterpart, {@code StickyTaskAssignor}, has no warmups and ignores lags, so this follows the
 * former's steps on the public API. Standbys only go to tasks with a changelog, as Kafka's do: a store with
 * logging disabled has nothing to restore from.
 */
final class HighAvailabilityPlacement {
    /** The assignment, and how many warmups it started (each calls for a probing rebalance). */
    record Placement(Map<ProcessId, Set<AssignedTask>> assignment, int warmups) {}

    private final ApplicationState state;
    private final CatchUp catchUp;
    private final AssignmentConfigs configs;
    private final Map<ProcessId, Integer> threads = new TreeMap<>();
    private final Map<ProcessId, Integer> actives = new HashMap<>();
    private final Map<ProcessId, Integer> copies = new HashMap<>();
    private final Map<TaskId, ProcessId> activeOn = new TreeMap<>();
    private final Map<ProcessId, Set<TaskId>> standbysOf = new TreeMap<>();

    private HighAvailabilityPlacement(ApplicationState state, CatchUp catchUp) {
        this.state = state;
        this.catchUp = catchUp;
        this.configs = state.assignmentConfigs();
        for (ProcessId client : catchUp.members()) {
            threads.put(client, Math.max(1, catchUp.clients().get(client).numProcessingThreads()));
            actives.put(client, 0);
            copies.put(client, 0);
            standbysOf.put(client, new TreeSet<>());
        }
    }

    /** Every task placed: {@code kept} as it is, the rest as Kafka's high-availability assignor would. */
    static Placement complete(ApplicationState state, CatchUp catchUp, Map<ProcessId, Set<AssignedTask>> kept) {
        HighAvailabilityPlacement placement = new HighAvailabilityPlacement(state, catchUp);
        placement.keep(kept);
        int warmups = placement.placeActives();
        placement.topUpStandbys();
        return new Placement(placement.result(), warmups);
    }

    /** Whether Kafka restores the task's state on a standby: only a task with a changelog has one to restore. */
    static boolean hasChangelog(TaskInfo task) {
        return task.topicPartitions().stream().anyMatch(TaskTopicPartition::isChangelog);
    }

    private void keep(Map<ProcessId, Set<AssignedTask>> kept) {
        kept.forEach((client, tasks) -> {
            if (!threads.containsKey(client)) {
                return;
            }
            for (AssignedTask task : tasks) {
                if (task.type() == AssignedTask.Type.ACTIVE && !activeOn.containsKey(task.id())) {
                    activeOn.put(task.id(), client);
                    actives.merge(client, 1, Integer::sum);
                }
            }
        });
        kept.forEach((client, tasks) -> {
            if (!threads.containsKey(client)) {
                return;
            }
            for (AssignedTask task : tasks) {
                if (task.type() == AssignedTask.Type.STANDBY) {
                    addStandby(client, task.id());
                }
            }
        });
    }

    private int placeActives() {
        List<TaskId> open = new ArrayList<>();
        for (TaskId task : new TreeSet<>(state.allTasks().keySet())) {
            if (!activeOn.containsKey(task)) {
                open.add(task);
            }
        }
        Map<TaskId, ProcessId> target = new TreeMap<>();
        for (TaskId task : open) {  // sticky: a task stays with its previous owner while that owner has room
            ProcessId owner = previousOwner(task);
            if (owner != null && actives.get(owner) < quota(owner)) {
                target.put(task, owner);
                actives.merge(owner, 1, Integer::sum);
            }
        }
        for (TaskId task : open) {  // the rest: the least behind among the members with room, then the least loaded
            if (!target.containsKey(task)) {
                ProcessId client = best(task, catchUp.members().stream().filter(c -> actives.get(c) < quota(c)).toList());
                if (client == null) {  // every member is at its share (kept tasks exceed it): stay put if possible
                    ProcessId owner = previousOwner(task);
                    client = owner != null ? owner : best(task, new ArrayList<>(catchUp.members()));
                }
                target.put(task, client);
                actives.merge(client, 1, Integer::sum);
            }
        }
        int warmups = 0;
        for (Map.Entry<TaskId, ProcessId> entry : target.entrySet()) {
            TaskId task = entry.getKey();
            ProcessId client = entry.getValue();
            if (stateful(task) && !catchUp.caughtUp(client, task)) {
                List<ProcessId> caughtUp = catchUp.members().stream().filter(c -> catchUp.caughtUp(c, task)).toList();
                if (!caughtUp.isEmpty()) {  // run it where its state is; warm the target up instead of a cold move
                    ProcessId owner = previousOwner(task);
                    ProcessId runner = caughtUp.contains(owner) ? owner : leastLoaded(caughtUp);
                    actives.merge(client, -1, Integer::sum);
                    actives.merge(runner, 1, Integer::sum);
                    if (warmups < configs.maxWarmupReplicas() && hasChangelog(state.allTasks().get(task))) {
                        addStandby(client, task);
                        warmups++;
                    }
                    client = runner;
                }
            }
            activeOn.put(task, client);
            Set<TaskId> standbys = standbysOf.get(client);
            if (standbys.remove(task)) {
                copies.merge(client, -1, Integer::sum);
            }
        }
        return warmups;
    }

    private void topUpStandbys() {
        int wanted = configs.numStandbyReplicas();
        for (TaskInfo info : new TreeMap<>(state.allTasks()).values()) {
            if (!hasChangelog(info)) {
                continue;
            }
            TaskId task = info.id();
            long have = standbysOf.values().stream().filter(set -> set.contains(task)).count();
            for (long n = have; n < wanted; n++) {
                List<ProcessId> free = catchUp.members().stream()
                    .filter(c -> !c.equals(activeOn.get(task)) && !standbysOf.get(c).contains(task)).toList();
                if (free.isEmpty()) {
                    break;  // fewer members than copies: Kafka leaves them out too
                }
                addStandby(free.stream().min(Comparator.comparingLong((ProcessId c) -> catchUp.lag(c, task))
                    .thenComparingDouble(c -> (double) (actives.get(c) + copies.get(c)) / threads.get(c))
                    .thenComparing(ProcessId::id)).orElseThrow(), task);
            }
        }
    }

    private Map<ProcessId, Set<AssignedTask>> result() {
        Map<ProcessId, Set<AssignedTask>> assignment = new TreeMap<>();
        for (ProcessId client : catchUp.members()) {
            Set<AssignedTask> tasks = new java.util.HashSet<>();
            standbysOf.get(client).forEach(task -> tasks.add(new AssignedTask(task, AssignedTask.Type.STANDBY)));
            assignment.put(client, tasks);
        }
        activeOn.forEach((task, client) -> assignment.get(client).add(new AssignedTask(task, AssignedTask.Type.ACTIVE)));
        return assignment;
    }

    private void addStandby(ProcessId client, TaskId task) {
        if (!client.equals(activeOn.get(task)) && standbysOf.get(client).add(task)) {
            copies.merge(client, 1, Integer::sum);
        }
    }

    /** A member's fair share of the actives: the tasks in proportion to its stream threads, rounded up. */
    private int quota(ProcessId client) {
        int allThreads = threads.values().stream().mapToInt(Integer::intValue).sum();
        return (int) Math.ceil((double) state.allTasks().size() * threads.get(client) / allThreads);
    }

    private ProcessId previousOwner(TaskId task) {
        List<ProcessId> owners = catchUp.members().stream()
            .filter(c -> catchUp.clients().get(c).previousActiveTasks().contains(task)).toList();
        return owners.size() == 1 ? owners.get(0) : null;  // two claim it (a zombie): let lags decide
    }

    private ProcessId best(TaskId task, List<ProcessId> candidates) {
        Comparator<ProcessId> order = stateful(task)
            ? Comparator.comparingLong((ProcessId c) -> catchUp.lag(c, task)).thenComparing(load())
            : load();
        return candidates.stream().min(order.thenComparing(ProcessId::id)).orElse(null);
    }

    private ProcessId leastLoaded(List<ProcessId> candidates) {
        return candidates.stream().min(load().thenComparing(ProcessId::id)).orElseThrow();
    }

    private Comparator<ProcessId> load() {
        return Comparator.comparingDouble(c -> (double) actives.get(c) / threads.get(c));
    }

    private boolean stateful(TaskId task) {
        return state.allTasks().get(task).isStateful();
    }
}
