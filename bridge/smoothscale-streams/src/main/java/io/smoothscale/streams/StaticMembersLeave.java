package io.smoothscale.streams;

import java.time.Duration;
import java.util.Collection;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.regex.Pattern;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.MemberDescription;
import org.apache.kafka.clients.admin.MemberToRemove;
import org.apache.kafka.clients.admin.RemoveMembersFromConsumerGroupOptions;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.streams.StreamsConfig;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Takes a retiring pod's static members out of its group when the bridge closes, so that the rebalance the
 * remaining pods need does not wait for them.
 *
 * <p>A static member (the app sets {@code group.instance.id}) sends no LeaveGroup when its consumer closes: the
 * group coordinator keeps it, and any rebalance waits for it to rejoin, until {@code session.timeout.ms}
 * expires. That is what lets a pod restarted in place take its tasks back without a rebalance; but a pod the
 * operator retires (scale-in, swap, drain) never comes back, and the next rebalance waited out its session
 * (30 s and more). Kafka's way out is the Admin API's {@code removeMembersFromConsumerGroup} by instance id
 * (KIP-345), which Kafka Streams itself calls for a thread it removes and, closed with {@code leaveGroup}
 * (KIP-812), for its threads. The bridge calls it for its own pod's members once the instance has closed, when
 * the newest publication gives the pod no task: the operator deletes a Kafka Streams pod only once its plan
 * has moved every task away (a leaving pod), whereas a pod restarted in place (a rolling restart, a crash) still
 * holds its tasks in the plan and keeps its members for its static rejoin.
 *
 * <p>Kafka Streams gives each stream thread's consumer the instance id {@code <group.instance.id>-<thread
 * index>}; the members removed are those of the group whose instance id is this pod's base plus a thread index,
 * found with {@code describeConsumerGroups} (threads added or replaced get new indexes). When it cannot (the
 * brokers unreachable within {@link #TIMEOUT}, the pod killed before it closed), the members stay until their
 * sessions expire, as without the bridge; that is logged at WARN.
 */
final class StaticMembersLeave {
    private static final Logger LOG = LoggerFactory.getLogger(StaticMembersLeave.class);
    /** The whole leave's bound: an admin client's start, a describe and a removal, 1 to 2 s on a loaded machine
     * with three pods stopping at once (measured here), so 15 s leaves room for a coordinator that moves or is
     * slow; it runs beside the app's own close, within the pod's grace period (30 s by default). */
    static final Duration TIMEOUT = Duration.ofSeconds(15);

    private final String applicationId;
    private final String instanceIdBase;
    private final Map<String, Object> adminConfigs;

    private StaticMembersLeave(String applicationId, String instanceIdBase, Map<String, Object> adminConfigs) {
        this.applicationId = applicationId;
        this.instanceIdBase = instanceIdBase;
        this.adminConfigs = adminConfigs;
    }

    /** The leave of the instance with these Streams settings; empty when its members are dynamic (they leave
     * the group themselves on close). */
    static Optional<StaticMembersLeave> of(Map<?, ?> streamsSettings, String clientId) {
        QuietStreamsConfig config = new QuietStreamsConfig(streamsSettings);
        String applicationId = config.getString(StreamsConfig.APPLICATION_ID_CONFIG);
        // What Kafka Streams gives thread 1's main consumer, less the thread index.
        Object instanceId = config.getMainConsumerConfigs(applicationId, clientId, 1)
            .get(ConsumerConfig.GROUP_INSTANCE_ID_CONFIG);
        if (instanceId == null || !instanceId.toString().endsWith("-1")) {
            return Optional.empty();
        }
        String base = instanceId.toString().substring(0, instanceId.toString().length() - 2);
        Map<String, Object> admin = new HashMap<>(config.getAdminConfigs(clientId + "-smoothscale-leave"));
        admin.remove(StreamsConfig.METRIC_REPORTER_CLASSES_CONFIG);
        return Optional.of(new StaticMembersLeave(applicationId, base, admin));
    }

    /** Whether the pod is retiring: the newest publication gives it no task (no publication read: unknown, so
     * not retiring). */
    static boolean retiring(Optional<Publication> newest, String pod) {
        return newest.map(publication -> !publication.isNothing() && publication.tasksOf(pod).isEmpty())
            .orElse(false);
    }

    /** This pod's members among the group's instance ids: the base, a dash, a thread index. */
    static List<String> ownMembers(Collection<String> instanceIds, String base) {
        Pattern own = Pattern.compile(Pattern.quote(base) + "-\\d+");
        return instanceIds.stream().filter(id -> own.matcher(id).matches()).sorted().toList();
    }

    String instanceIdBase() {
        return instanceIdBase;
    }

    /** Remove this pod's static members from the group; the instance ids removed (empty when none was left, or
     * when it could not: logged). */
    List<String> leave() {
        long deadline = System.nanoTime() + TIMEOUT.toNanos();
        Admin admin = null;
        try {
            admin = Admin.create(adminConfigs);
            Collection<MemberDescription> members = admin.describeConsumerGroups(List.of(applicationId))
                .describedGroups().get(applicationId).get(remaining(deadline), TimeUnit.MILLISECONDS).members();
            List<String> own = ownMembers(members.stream().flatMap(m -> m.groupInstanceId().stream()).toList(),
                instanceIdBase);
            if (!own.isEmpty()) {
                admin.removeMembersFromConsumerGroup(applicationId, new RemoveMembersFromConsumerGroupOptions(
                        own.stream().map(MemberToRemove::new).toList()))
                    .all().get(remaining(deadline), TimeUnit.MILLISECONDS);
                LOG.info("Removed this retiring pod's static members {} from group {}: the next rebalance need not"
                    + " wait for their sessions to expire", own, applicationId);
            }
            return own;
        } catch (ExecutionException | TimeoutException | RuntimeException error) {
            LOG.warn("Could not remove this retiring pod's static members {}-<thread> from group {} ({}): the group"
                + " keeps them until their session.timeout.ms expires", instanceIdBase, applicationId,
                error.toString());
        } catch (InterruptedException error) {
            Thread.currentThread().interrupt();
        } finally {
            if (admin != null) {
                admin.close(Duration.ZERO);  // nothing left to wait for: a call still pending is abandoned
            }
        }
        return List.of();
    }

    private static long remaining(long deadline) {
        return Math.max(1, TimeUnit.NANOSECONDS.toMillis(deadline - System.nanoTime()));
    }
}
