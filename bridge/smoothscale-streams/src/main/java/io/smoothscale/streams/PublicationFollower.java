package io.smoothscale.streams;

import java.util.HashSet;
import java.util.Optional;
import java.util.Collection;
import java.util.Set;
import java.util.TreeSet;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.LongSupplier;
import java.util.function.Supplier;
import org.apache.kafka.streams.KafkaStreams;
import org.apache.kafka.streams.ThreadMetadata;
import org.apache.kafka.streams.TaskMetadata;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Keeps this instance on the newest publication: when it runs something other than what the publication
 * gives its pod, it asks for a rebalance (at once for a new generation, then again every
 * {@code retryMillis} while it still differs, {@code maxRequests} times, for when the leader had not read the
 * generation yet; then every {@code slowRetryMillis} for as long as it differs: a leader that could not
 * reach the API server for a while reads the generation late, and a rebalance it led meanwhile with the old
 * one schedules nothing that would bring the group to the new one); when it runs it, it records that
 * generation as the one it runs
 * and how long after reading the publication that happened. While nothing is published (generation 0, no
 * ConfigMap yet) it runs whatever Kafka's own assignment gives it, and reports generation 0: the operator
 * plans for pods that follow their assignment.
 */
public final class PublicationFollower implements AutoCloseable {
    private static final Logger LOG = LoggerFactory.getLogger(PublicationFollower.class);
    private static final long CHECK_MILLIS = 100;

    private final String pod;
    private final LatestPublication latest;
    private final RebalanceTrigger trigger;
    private final Supplier<Optional<RunningTasks>> running;
    private final Supplier<Set<Integer>> statefulSubtopologies;
    private final long retryMillis;
    private final int maxRequests;
    private final long slowRetryMillis;
    private final ScheduledExecutorService executor = Executors.newSingleThreadScheduledExecutor(runnable -> {
        Thread thread = new Thread(runnable, "smoothscale-publication-follower");
        thread.setDaemon(true);
        return thread;
    });
    private final AtomicLong runningGeneration = new AtomicLong(-1);
    private volatile double lastApplySeconds = Double.NaN;
    private long requestedGeneration = -1;
    private int requests;
    private long lastRequestNanos;
    private final LongSupplier nanoClock;

    public PublicationFollower(String pod, LatestPublication latest, RebalanceTrigger trigger,
                               Supplier<Optional<RunningTasks>> running, Supplier<Set<Integer>> statefulSubtopologies,
                               long retryMillis, int maxRequests, long slowRetryMillis) {
        this(pod, latest, trigger, running, statefulSubtopologies, retryMillis, maxRequests, slowRetryMillis,
            System::nanoTime);
    }

    /** With the clock that spaces the requests given (tests step it instead of sleeping). */
    PublicationFollower(String pod, LatestPublication latest, RebalanceTrigger trigger,
                        Supplier<Optional<RunningTasks>> running, Supplier<Set<Integer>> statefulSubtopologies,
                        long retryMillis, int maxRequests, long slowRetryMillis, LongSupplier nanoClock) {
        this.nanoClock = nanoClock;
        this.pod = pod;
        this.latest = latest;
        this.trigger = trigger;
        this.running = running;
        this.statefulSubtopologies = statefulSubtopologies;
        this.retryMillis = retryMillis;
        this.maxRequests = maxRequests;
        this.slowRetryMillis = slowRetryMillis;
    }

    /** Check every 100 ms, and at once whenever a new publication is read. */
    public void start() {
        latest.onChange(publication -> executor.execute(this::check));
        executor.scheduleWithFixedDelay(this::check, 0, CHECK_MILLIS, TimeUnit.MILLISECONDS);
    }

    /** The generation this instance runs (-1 until it runs one). */
    public long runningGeneration() {
        return runningGeneration.get();
    }

    /** Seconds from reading the last generation it runs to running it (NaN until then). */
    public double lastApplySeconds() {
        return lastApplySeconds;
    }

    synchronized void check() {
        LatestPublication.Reading reading = latest.reading();
        Optional<RunningTasks> now = running.get();
        if (reading.publication().isEmpty() || now.isEmpty()) {
            return;
        }
        Publication publication = reading.publication().get();
        if (publication.isNothing() || now.get().follow(publication, pod, statefulSubtopologies.get())) {
            if (runningGeneration.getAndSet(publication.generation()) != publication.generation()) {
                lastApplySeconds = (System.nanoTime() - reading.readAtNanos()) / 1e9;
            }
            return;
        }
        long nowNanos = nanoClock.getAsLong();
        if (requestedGeneration != publication.generation()) {
            requestedGeneration = publication.generation();
            requests = 0;
        } else if (nowNanos - lastRequestNanos
                   < (requests < maxRequests ? retryMillis : slowRetryMillis) * 1_000_000) {
            return;
        }
        requests++;
        lastRequestNanos = nowNanos;
        PodTasks planned = publication.tasksOf(pod);
        String reason = "smoothscale generation " + publication.generation() + " changes pod " + pod
            + "'s tasks (request " + requests + "): it runs active " + sorted(now.get().active()) + ", standby "
            + sorted(now.get().standby()) + "; the plan gives it active " + sorted(planned.active()) + ", standby "
            + sorted(planned.standby()) + ", warmup " + sorted(planned.warmup());
        LOG.info("Asking for a rebalance: {}", reason);
        trigger.request(reason);
    }

    /** What a KafkaStreams instance runs; empty while it is not RUNNING (its thread metadata lags then). */
    public static Optional<RunningTasks> of(KafkaStreams streams) {
        if (streams.state() != KafkaStreams.State.RUNNING) {
            return Optional.empty();
        }
        Set<String> active = new HashSet<>();
        Set<String> standby = new HashSet<>();
        for (ThreadMetadata thread : streams.metadataForLocalThreads()) {
            thread.activeTasks().stream().map(TaskMetadata::taskId).forEach(task -> active.add(task.toString()));
            thread.standbyTasks().stream().map(TaskMetadata::taskId).forEach(task -> standby.add(task.toString()));
        }
        return Optional.of(new RunningTasks(active, standby));
    }

    private static Set<String> sorted(Collection<String> tasks) {
        return new TreeSet<>(tasks);
    }

    @Override
    public void close() {
        executor.shutdownNow();
    }
}
