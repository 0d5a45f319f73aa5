package io.smoothscale.streams;

import java.util.Optional;
import java.util.SortedSet;
import java.util.TreeSet;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.apache.kafka.streams.processor.assignment.KafkaStreamsState;

/**
 * Which pod a Kafka Streams client runs in, read from its {@code client.id}.
 *
 * <p>The bridge sets {@code client.id} to the pod's name. Each stream thread's main consumer then joins the
 * group as {@code <client.id>-StreamThread-<n>-consumer}, and the group coordinator makes its member id that
 * client id followed by {@code -<uuid>}; the leader sees those member ids in
 * {@link KafkaStreamsState#consumerClientIds()}. {@code client.id} was chosen over the alternatives because it
 * has no length limit (a client tag's value is capped at 30 characters, a StatefulSet pod's name can reach
 * 63), it leaves {@code application.server} to interactive queries, and it already names the pod in every
 * log line and JMX metric of the app.
 *
 * <p>With static membership ({@code group.instance.id} set to the pod's name, so that a pod restarted within
 * {@code session.timeout.ms} rejoins without a rebalance and keeps its tasks), Kafka Streams gives each stream
 * thread's consumer the instance id {@code <group.instance.id>-<n>}, and the coordinator makes the member id
 * that instance id followed by {@code -<uuid>}: {@code <pod>-<n>-<uuid>}.
 */
public final class PodNames {
    private static final String UUID = "[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}";
    private static final Pattern DYNAMIC_MEMBER = Pattern.compile(
        "^(?<pod>.+)-StreamThread-\\d+-consumer(-" + UUID + ")?$");
    private static final Pattern STATIC_MEMBER = Pattern.compile("^(?<pod>.+)-[1-9]\\d*-" + UUID + "$");

    private PodNames() {}

    /**
     * The pod name in one consumer's member id (or client id); empty when it is not a stream thread's. A
     * dynamic member's id names the pod by its {@code client.id}, a static member's by its
     * {@code group.instance.id}.
     */
    public static Optional<String> ofMember(String memberId) {
        for (Pattern pattern : new Pattern[] {DYNAMIC_MEMBER, STATIC_MEMBER}) {
            Matcher matcher = pattern.matcher(memberId);
            if (matcher.matches()) {
                return Optional.of(matcher.group("pod"));
            }
        }
        return Optional.empty();
    }

    /**
     * The pod of a Kafka Streams client: every one of its consumers must name the same pod; empty otherwise
     * (no consumer, a consumer that is not a stream thread's, or threads that disagree).
     */
    public static Optional<String> of(KafkaStreamsState client) {
        SortedSet<String> pods = new TreeSet<>();
        for (String member : client.consumerClientIds()) {
            Optional<String> pod = ofMember(member);
            if (pod.isEmpty()) {
                return Optional.empty();
            }
            pods.add(pod.get());
        }
        return pods.size() == 1 ? Optional.of(pods.first()) : Optional.empty();
    }
}
