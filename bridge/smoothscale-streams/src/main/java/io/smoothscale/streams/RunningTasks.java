package io.smoothscale.streams;

import java.util.Set;
import java.util.TreeSet;
import org.apache.kafka.streams.processor.TaskId;
import org.apache.kafka.streams.errors.TaskIdFormatException;

/**
 * The tasks an instance runs now (actives, and standbys: Kafka's name for the operator's standbys and
 * warmups), and whether that is what a publication asks of its pod.
 *
 * @param active task ids active on this instance
 * @param standby task ids this instance keeps as standbys
 */
public record RunningTasks(Set<String> active, Set<String> standby) {

    public RunningTasks {
        active = Set.copyOf(active);
        standby = Set.copyOf(standby);
    }

    /**
     * Whether these are the tasks {@code publication} gives {@code pod}. The comparison is the one Kafka can
     * honour: a task still under revocation counts as active on its old owner while no pod is named for it,
     * and a standby or warmup counts only for stateful subtopologies and away from the task's active.
     */
    public boolean follow(Publication publication, String pod, Set<Integer> statefulSubtopologies) {
        PodTasks mine = publication.tasksOf(pod);
        Set<String> activeAnywhere = new TreeSet<>();
        publication.assignment().values().forEach(tasks -> activeAnywhere.addAll(tasks.active()));
        Set<String> wantedActive = new TreeSet<>(mine.active());
        publication.revoking().forEach((task, revocation) -> {
            if (revocation.owner().equals(pod) && !activeAnywhere.contains(task)) {
                wantedActive.add(task);
            }
        });
        Set<String> wantedStandby = new TreeSet<>();
        for (String task : concat(mine)) {
            if (!wantedActive.contains(task) && statefulSubtopologies.contains(subtopology(task))) {
                wantedStandby.add(task);
            }
        }
        return wantedActive.equals(active) && wantedStandby.equals(standby);
    }

    private static Set<String> concat(PodTasks tasks) {
        Set<String> all = new TreeSet<>(tasks.standby());
        all.addAll(tasks.warmup());
        return all;
    }

    private static int subtopology(String task) {
        try {
            return TaskId.parse(task).subtopology();
        } catch (TaskIdFormatException error) {
            return -1;
        }
    }
}
